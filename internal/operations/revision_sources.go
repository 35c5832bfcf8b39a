package operations

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Head is a checkout of one revision of a GitRepository that DiffAppsAt renders the
// Applications reading that repository at.
type Head struct {
	// Key is the GitRepository; Root its checkout of Revision.
	Key            client.ObjectKey
	Root, Revision string
	// Others fetches the current artifact of another GitRepository, of the Application's
	// namespace, that an Application reads too (one of spec.sources, a source of
	// helm.valuesFilesFrom); nil: such an Application's diff fails.
	Others GitCheckouts
	// Current renders, at its current artifact, a chart or OCI source of spec.sources
	// beside head's (view is the Application as it renders that source, roots the values
	// checkouts); nil: such an Application's diff fails.
	Current func(ctx context.Context, view *gitsyncv1.Application, cluster *render.Cluster, roots map[string]string) (*Rendered, error)
}

// GitCheckouts fetches the current artifact of the GitRepository key: its directory and
// revision.
type GitCheckouts func(ctx context.Context, key client.ObjectKey) (dir, revision string, err error)

// readsGitRepository tells whether app renders the GitRepository key: its sourceRef, or
// one of spec.sources.
func readsGitRepository(app *gitsyncv1.Application, key client.ObjectKey) bool {
	for i, src := range app.SourceList() {
		if k := src.SourceRef.Kind; (k == "" || k == gitsyncv1.GitRepositoryKind) && sourceid.Key(app.ForSource(i)) == key {
			return true
		}
	}
	return false
}

// renderAtHead renders app as DiffAppsAt does: each Git source (and values source) that
// is head's GitRepository from head's checkout, any other Git one at its current
// artifact (head.Others, in app's namespace only), a chart or OCI source at its current
// artifact too (head.Current), joined as the sync joins them.
func renderAtHead(ctx context.Context, app *gitsyncv1.Application, head Head, a Actor, rf RenderFunc) (*Rendered, error) {
	checkout := func(key client.ObjectKey) (string, string, error) {
		if key == head.Key {
			return head.Root, head.Revision, nil
		}
		if head.Others == nil || key.Namespace != app.Namespace {
			return "", "", fmt.Errorf("GitRepository %s is not at hand for this diff", key)
		}
		return head.Others(ctx, key)
	}
	var roots map[string]string
	var valuesRevisions []string
	for _, src := range app.SourceList() {
		if src.Helm == nil {
			continue
		}
		for _, ref := range src.Helm.ValuesFilesFrom {
			key := ref.SourceRef.Key()
			if _, ok := roots[key]; ok {
				continue
			}
			dir, rev, err := checkout(types.NamespacedName{Namespace: app.Namespace, Name: ref.SourceRef.Name})
			if err != nil {
				return nil, fmt.Errorf("values source %s: %w", key, err)
			}
			if roots == nil {
				roots = map[string]string{}
			}
			roots[key] = dir
			valuesRevisions = append(valuesRevisions, gitsyncv1.SourceRevision(key, rev))
		}
	}
	out := &Rendered{ValuesRevisions: valuesRevisions}
	var joined render.Joined
	var entries []string
	for i, src := range app.SourceList() {
		view := app.ForSource(i)
		label := app.SourceLabel(i)
		var (
			res *render.Result
			rev string
			err error
		)
		if k := src.SourceRef.Kind; k != "" && k != gitsyncv1.GitRepositoryKind {
			if head.Current == nil {
				return nil, fmt.Errorf("%s: not previewed here: only the Git sources of an Application are fetched for a preview", label)
			}
			r, cerr := head.Current(ctx, view, a.Cluster, roots)
			if cerr != nil {
				return nil, fmt.Errorf("%s: %w", label, cerr)
			}
			res, rev = &render.Result{Objects: r.Objects, Encrypted: r.Encrypted, Sensitive: r.Sensitive}, r.Revision
		} else {
			var dir string
			if dir, rev, err = checkout(sourceid.Key(view)); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
			res, err = rf(ctx, view, render.Source{Root: dir, Path: view.Spec.Path, KeepEncrypted: true, ValuesRoots: roots}, a.Cluster)
		}
		if err != nil {
			if !app.MultiSource() {
				return nil, fmt.Errorf("building %s at %s: %w", PathOrDot(app.Spec.Path), rev, err)
			}
			return nil, fmt.Errorf("%s: building %s at %s: %w", label, PathOrDot(view.Spec.Path), rev, err)
		}
		if err := joined.Add(label, res); err != nil {
			return nil, err
		}
		entries = append(entries, gitsyncv1.SourceRevision(app.SourceName(src.SourceRef), rev))
		if !app.MultiSource() {
			out.Revision = rev
		}
	}
	out.Objects, out.Encrypted, out.Sensitive = joined.Objects, joined.Encrypted, joined.Sensitive
	if app.MultiSource() {
		out.Revision = gitsyncv1.JoinRevisions(entries)
	}
	out.From = NewRendered(&render.Result{Offline: a.Cluster == nil, Encrypted: out.Encrypted}, "revision "+out.Revision).From
	return out, nil
}

// currentCheckouts fetches GitRepositories' current artifacts into directories below
// tmp, reading them and their credentials with c.
func currentCheckouts(c client.Client, tmp string) GitCheckouts {
	return func(ctx context.Context, key client.ObjectKey) (string, string, error) {
		dir, err := os.MkdirTemp(tmp, "source-")
		if err != nil {
			return "", "", fmt.Errorf("creating a temporary directory: %w", err)
		}
		artifact, rev, err := fetchGit(ctx, c, key, dir, CurrentRef)
		if err != nil {
			return "", "", err
		}
		return artifact.Dir, rev, nil
	}
}

// CurrentRef is the ref of a GitRepository's current artifact (the commit of its
// status.artifact, on the branch it follows) and that artifact's revision.
func CurrentRef(repo *gitsyncv1.GitRepository) (source.Ref, string, error) {
	a := repo.Status.Artifact
	if a == nil || source.CommitOf(a.Revision) == "" {
		return source.Ref{}, "", fmt.Errorf("source GitRepository %s has no artifact yet", client.ObjectKeyFromObject(repo))
	}
	ref := source.Ref{Commit: source.CommitOf(a.Revision)}
	if repo.Spec.Ref != nil {
		ref.Branch = repo.Spec.Ref.Branch
	}
	return ref, a.Revision, nil
}
