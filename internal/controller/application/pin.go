package application

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// inHistory tells whether app applied commit before (its history or last applied revision).
func inHistory(app *gitsyncv1.Application, commit string) bool {
	if source.CommitOf(app.Status.LastAppliedRevision) == commit {
		return true
	}
	for _, h := range app.Status.History {
		if source.CommitOf(h.Revision) == commit {
			return true
		}
	}
	return false
}

// commitFetcher is what the pin needs of the storage to bring back a checkout that is no
// longer there (source.Fetcher has it).
type commitFetcher interface {
	Fetch(ctx context.Context, req source.Request) (*source.Artifact, error)
}

// reconcilePinned replaces the source's artifact with spec.pinnedRevision (a rollback):
// that revision is applied at once, whatever autoSync says, and newer commits are not,
// until the pin is cleared. When the pinned commit's checkout is not in storage it is
// fetched again from the GitRepository's URL (which proves the remote still serves it).
// Only a revision of the Application's own history may be pinned (Ready=False,
// AccessDenied otherwise). Sets Ready=False/ArtifactNotReady when the revision cannot be
// checked out.
func (r *Reconciler) reconcilePinned(ctx context.Context, s *syncRun, repo *gitsyncv1.GitRepository) outcome {
	pinned := s.app.Spec.PinnedRevision
	commit := source.CommitOf(pinned)
	if commit == "" {
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("spec.pinnedRevision %q names no commit", pinned))
	}
	if !inHistory(s.app, commit) {
		// A pin names only what this Application applied before: a commit seen elsewhere
		// (another tenant's status or events) is not a way to read that tenant's code.
		return r.revisionStalled(s, gitsyncv1.AccessDeniedReason, fmt.Sprintf(
			"spec.pinnedRevision %s is not a revision this Application applied (status.history): pin one of those", pinned))
	}
	s.revision = pinned
	s.dir = sourceid.CheckoutDir(r.Storage, repo, commit)
	if _, err := os.Stat(s.dir); err == nil {
		return done()
	}
	dir, err := r.fetchCommit(ctx, repo, commit)
	if err != nil {
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("pinned revision %s: %v", pinned, err))
	}
	s.dir = dir
	return done()
}

// fetchCommit fetches commit from the GitRepository's URL into storage (a pinned
// revision whose checkout is gone, or the artifact of a source another shard owns) and
// returns the checkout's directory.
func (r *Reconciler) fetchCommit(ctx context.Context, repo *gitsyncv1.GitRepository, commit string) (string, error) {
	fetcher, ok := r.Storage.(commitFetcher)
	if !ok {
		return "", fmt.Errorf("checkout of commit %s is not in storage", commit)
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	ref := source.Ref{Commit: commit}
	if repo.Spec.Ref != nil {
		ref.Branch = repo.Spec.Ref.Branch
	}
	request, err := sourceid.GitRequest(ctx, reader, repo, ref)
	if err != nil {
		return "", fmt.Errorf("fetching commit %s: %w", commit, err)
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		return "", fmt.Errorf("fetching commit %s of %s: %w", commit, client.ObjectKeyFromObject(repo), err)
	}
	return artifact.Dir, nil
}
