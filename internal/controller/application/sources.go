package application

import (
	"context"
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// valuesSources are the checkouts of spec.helm.valuesFilesFrom's sources that a sync reads.
type valuesSources struct {
	// roots are the checkouts by ValuesSourceReference.Key.
	roots map[string]string
	// revisions are `GitRepository/<name>@<revision>`, in spec order, one per source.
	revisions []string
}

// changed tells whether the values sources are at other revisions than the last applied
// sync read.
func (v valuesSources) changed(app *gitsyncv1.Application) bool {
	return !slices.Equal(v.revisions, app.Status.ValuesRevisions)
}

// reconcileValuesSources finds the checkouts of the GitRepositories that
// spec.helm.valuesFilesFrom (of each of spec.sources) reads (in the Application's namespace). One without an
// artifact, or whose checkout is not in storage yet: Ready=False/ArtifactNotReady (its
// watch wakes the Application when it comes). A new revision of one of them renders the
// Application again, as a new revision of its own source does.
// With autoSync off, a new revision of a values source waits for a sync request (sync
// OutOfSync) as a new revision of the Application's own source does.
func (r *Reconciler) reconcileValuesSources(ctx context.Context, s *syncRun) outcome {
	v, out := r.valuesSourcesOf(ctx, s.app)
	s.values = v
	app := s.app
	if out.kind == stepDone && !autoSync(app) && s.revision == app.Status.LastAppliedRevision && v.changed(app) &&
		app.Generation == app.Status.ObservedGeneration && app.PendingRequest() == "" && resumable(s) == nil {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
		return waitFor(0, "", "")
	}
	return out
}

// valuesSourcesOf resolves the checkouts of app's values sources at their current
// artifacts; the outcome says what is waited for when one is not there.
func (r *Reconciler) valuesSourcesOf(ctx context.Context, app *gitsyncv1.Application) (valuesSources, outcome) {
	var v valuesSources
	refs := valuesFileRefs(app)
	if len(refs) == 0 {
		return v, done()
	}
	v.roots = map[string]string{}
	for _, ref := range refs {
		key := ref.SourceRef.Key()
		if _, ok := v.roots[key]; ok {
			continue
		}
		nn := types.NamespacedName{Namespace: app.Namespace, Name: ref.SourceRef.Name}
		repo := &gitsyncv1.GitRepository{}
		if err := r.Get(ctx, nn, repo); err != nil {
			return v, waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("values source GitRepository %s: %v", nn, err))
		}
		artifact := kit.CurrentArtifact(repo)
		if artifact == nil {
			if reason, msg, failed := sourceFailure(repo, nn); failed {
				return v, waitFor(r.retryInterval(), reason, "values "+msg)
			}
			return v, waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("values source GitRepository %s has no artifact yet", nn))
		}
		dir := sourceid.CheckoutDir(r.Storage, repo, artifact.Commit)
		if _, err := os.Stat(dir); err != nil {
			if r.Shard.Enabled() && !r.Shard.Owns(repo) {
				if dir, err = r.fetchCommit(ctx, repo, artifact.Commit); err != nil {
					return v, waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("values source %s at %s: %v", nn, artifact.Revision, err))
				}
			} else {
				if err := r.requestSourceRefresh(ctx, repo); err != nil {
					return v, retry(err)
				}
				return v, waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason,
					fmt.Sprintf("checkout of values source %s at %s is not in storage; asked it to fetch it", nn, artifact.Revision))
			}
		}
		v.roots[key] = dir
		v.revisions = append(v.revisions, key+"@"+artifact.Revision)
	}
	return v, done()
}

// acquire keeps the values checkouts from GC until release is called.
func (v valuesSources) acquire(storage Checkouts) (release func()) {
	var releases []func()
	for _, dir := range v.roots {
		releases = append(releases, storage.Acquire(dir))
	}
	return func() {
		for _, rel := range releases {
			rel()
		}
	}
}

// valuesSourceKeys are the ApplicationSourceIndex values of app's values sources: a new
// artifact of one of them wakes the Application.
func valuesSourceKeys(app *gitsyncv1.Application) []string {
	var keys []string
	for _, ref := range valuesFileRefs(app) {
		key := types.NamespacedName{Namespace: app.Namespace, Name: ref.SourceRef.Name}.String()
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// valuesFileRefs are the helm.valuesFilesFrom entries of every source app renders, in order.
func valuesFileRefs(app *gitsyncv1.Application) []gitsyncv1.ValuesFileReference {
	var refs []gitsyncv1.ValuesFileReference
	for _, src := range app.SourceList() {
		if src.Helm != nil {
			refs = append(refs, src.Helm.ValuesFilesFrom...)
		}
	}
	return refs
}
