package application

import (
	"context"
	"fmt"
	"os"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// reconcileSource finds the source's artifact and its checkout (every source's, with
// spec.sources). Without an artifact:
// Ready=False/ArtifactNotReady (the source's watch wakes the Application when it comes).
// With autoSync off, a new revision waits (sync OutOfSync) until requested-at changes.
func (r *Reconciler) reconcileSource(ctx context.Context, s *syncRun) outcome {
	app := s.app
	if app.MultiSource() {
		return r.reconcileSources(ctx, s) // multisource.go: spec.sources
	}
	switch app.Spec.SourceRef.Kind {
	case gitsyncv1.HelmRepositoryKind:
		return r.reconcileChartSource(ctx, s) // chart.go
	case gitsyncv1.OCIRepositoryKind:
		return r.reconcileOCISource(ctx, s) // ocisource.go
	}
	key := sourceid.Key(app)
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		msg := fmt.Sprintf("reading source %s: %v", key, err)
		if apierrors.IsNotFound(err) {
			msg = fmt.Sprintf("source GitRepository %s does not exist", key)
		}
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, msg)
	}
	artifact := kit.CurrentArtifact(repo)
	if artifact == nil {
		if reason, msg, failed := sourceFailure(repo, key); failed {
			return waitFor(r.retryInterval(), reason, msg)
		}
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("source GitRepository %s has no artifact yet", key))
	}
	s.revision = artifact.Revision
	if app.Spec.PinnedRevision != "" { // a rollback: see pin.go
		return r.reconcilePinned(ctx, s, repo)
	}

	if awaitingSyncRequest(s) {
		return waitFor(0, "", "")
	}
	s.signer = repo.Status.Artifact.Signer

	return r.useCheckout(ctx, s, repo, sourceid.CheckoutDir(r.Storage, repo, artifact.Commit),
		func(ctx context.Context) (string, error) { return r.fetchCommit(ctx, repo, artifact.Commit) },
		func() (string, string) {
			reason, msg, failed := sourceFailure(repo, key)
			if !failed { // the source is fetching it, or will
				reason, msg = gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("checkout of %s is not in storage; asked %s to fetch it", s.revision, key)
			}
			return reason, msg
		})
}

// useCheckout points s.dir at the source's artifact on this replica (dir), or, when
// another replica owns the source, at the copy fetch makes here. When the checkout is
// gone (a restart with a fresh storage path, or GC) it asks the source to fetch it again,
// once per revision (the source has its own backoff; its new status wakes this
// Application, which otherwise looks again less and less often), and waits with
// missing's reason and message — or quietly when the Application is synced at this
// revision already: the cluster is as it was, so the conditions stay (a flap to not
// Ready would make the next reconcile a full sync, overwriting drift that selfHeal: false
// only reports); reconcileRestore resumes drift protection once the checkout is back.
func (r *Reconciler) useCheckout(ctx context.Context, s *syncRun, repo client.Object, dir string,
	fetch func(context.Context) (string, error), missing func() (reason, msg string)) outcome {
	app := s.app
	s.dir = dir
	if _, err := os.Stat(dir); err != nil && r.Shard.Enabled() && !r.Shard.Owns(repo) {
		// Another replica owns the source and fetched the artifact on its own disk.
		if s.dir, err = fetch(ctx); err != nil {
			return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("revision %s: %v", s.revision, err))
		}
	} else if err != nil {
		ask, wait := r.askRefresh(client.ObjectKeyFromObject(app), s.revision)
		if ask {
			if err := r.requestSourceRefresh(ctx, repo); err != nil {
				return retry(err)
			}
		}
		if settled(app, s.revision) {
			return waitFor(wait, "", "")
		}
		reason, msg := missing()
		return waitFor(wait, reason, msg)
	}
	r.refreshDone(client.ObjectKeyFromObject(app))
	return done()
}

// sourceFailure passes a failing source's own reason and message through (its Ready is
// False for its current spec): "source GitRepository ns/name: <the fetch error>".
func sourceFailure(repo *gitsyncv1.GitRepository, key types.NamespacedName) (reason, msg string, failed bool) {
	ready := conditions.Get(repo, gitsyncv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || repo.Status.ObservedGeneration != repo.Generation ||
		ready.Reason == gitsyncv1.ProgressingReason {
		return "", "", false
	}
	return ready.Reason, fmt.Sprintf("source GitRepository %s: %s", key, ready.Message), true
}

// settled tells whether the Application was synced at revision with its current spec,
// is Ready (or not Ready only for what it reports: drift left alone, objects a sync
// request kept from the prune), and no sync was requested since.
func settled(app *gitsyncv1.Application, revision string) bool {
	return revision == app.Status.LastAppliedRevision &&
		app.Generation == app.Status.ObservedGeneration &&
		(conditions.IsReady(app) || reportedOnly(app)) &&
		app.PendingRequest() == ""
}

// reportedOnly tells whether Ready is False for a state the Application reports but
// does not change by itself: drift (selfHeal off, or a fight's backoff) and objects
// that left Git but a sync request kept from the prune.
func reportedOnly(app *gitsyncv1.Application) bool {
	if !conditions.IsFalse(app, gitsyncv1.ReadyCondition) {
		return false
	}
	return gitsyncv1.ReportedOnly(conditions.GetReason(app, gitsyncv1.ReadyCondition))
}

// awaitingSyncRequest holds a new revision back while autoSync is off and no sync was
// requested (a sync of it that waits for a hook or a wave goes on): sync OutOfSync,
// Ready False (the newest revision is not applied; Unknown before the first sync), and
// the steps stop.
func awaitingSyncRequest(s *syncRun) bool {
	app := s.app
	if autoSync(app) || s.revision == app.Status.LastAppliedRevision || app.PendingRequest() != "" || resumable(s) != nil {
		return false
	}
	app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
	if app.Status.LastAppliedRevision == "" {
		if conditions.Has(app, gitsyncv1.ReadyCondition) {
			conditions.Delete(app, gitsyncv1.ReconcilingCondition)
			return true // a failure before any sync keeps its reason
		}
		conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, gitsyncv1.AwaitingSyncReason,
			"revision %s waits for a sync request (autoSync is false)", s.revision)
	} else if !conditions.IsFalse(app, gitsyncv1.ReadyCondition) || conditions.GetReason(app, gitsyncv1.ReadyCondition) == gitsyncv1.AwaitingSyncReason {
		// Another Ready=False (a failure, drift left alone) keeps its reason.
		conditions.MarkFalse(app, gitsyncv1.ReadyCondition, gitsyncv1.AwaitingSyncReason,
			"revision %s waits for a sync request (autoSync is false); applied revision %s", s.revision, app.Status.LastAppliedRevision)
	}
	conditions.Delete(app, gitsyncv1.ReconcilingCondition)
	return true
}
