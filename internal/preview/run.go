package preview

import (
	"context"
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/forge"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// StatusContext is the commit status a preview sets on the head commit.
const StatusContext = "gitsync/preview"

// Marker is the hidden line by which the preview finds its own comment again.
const Marker = "<!-- gitsync-preview -->"

// runOne previews req: the repository's spec.preview decides whether (target branch,
// forks); then the head is fetched, each Application on the repository rendered and
// dry-run as itself, and the comment and the commit status written. A cancelled run
// (a newer push, a closed pull request) writes nothing more.
func (r *Runner) runOne(ctx context.Context, req Request) {
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	log := r.Log.WithValues("repository", key, "number", req.Number)
	repo := &gitsyncv1.GitRepository{}
	if err := r.Client.Get(ctx, key, repo); err != nil {
		log.Info("no preview: reading the GitRepository failed", "error", err.Error())
		return
	}
	if reason := Wants(repo, req); reason != "" {
		log.V(1).Info("no preview", "reason", reason)
		return
	}
	fc, err := r.forgeClient(ctx, repo)
	if err != nil {
		log.Info("no preview: the Provider cannot be used", "error", err.Error())
		return
	}
	frepo, err := forge.ParseRepo(repo.Spec.URL)
	if err != nil {
		log.Info("no preview: the repository URL names no forge repository", "error", err.Error())
		return
	}
	status := func(state, desc string) {
		if ctx.Err() != nil {
			return
		}
		if err := fc.SetStatus(ctx, frepo, req.HeadSHA, forge.Status{State: state, Context: StatusContext, Description: desc}); err != nil {
			log.Info("setting the preview's commit status failed", "error", err.Error())
		}
	}
	status(forge.StatePending, "rendering and dry-running the head")

	diffs, revision, err := r.diff(ctx, repo, req, fc.Target.Type)
	if ctx.Err() != nil {
		log.Info("preview cancelled: a newer push or a closed pull request")
		return
	}
	body := Comment(req, revision, diffs, err)
	if _, cerr := fc.UpsertComment(ctx, frepo, req.Number, Marker, body); cerr != nil {
		log.Info("writing the preview comment failed", "error", cerr.Error())
	}
	state, desc := Summary(diffs, err)
	status(state, desc)
	log.Info("preview posted", "state", state)
}

// Wants says why req gets no preview of repo ("" when it does): no spec.preview, a
// target branch not listed, a fork without forks: true.
func Wants(repo *gitsyncv1.GitRepository, req Request) string {
	p := repo.Spec.Preview
	if p == nil {
		return "the GitRepository has no spec.preview"
	}
	targets := p.TargetBranches
	if len(targets) == 0 && repo.Spec.Ref != nil && repo.Spec.Ref.Branch != "" {
		targets = []string{repo.Spec.Ref.Branch}
	}
	if len(targets) > 0 && !slices.Contains(targets, req.BaseBranch) {
		return fmt.Sprintf("target branch %q is not one of spec.preview.targetBranches", req.BaseBranch)
	}
	if req.Fork && !p.Forks {
		return "the pull request comes from a fork and spec.preview.forks is false"
	}
	if source.CommitOf(req.HeadSHA) == "" {
		return "the head names no commit"
	}
	return ""
}

// diff fetches the head (the repository's URL, credentials, ignore rules and timeout;
// the sync's fetcher options) into a temporary directory and diffs every Application
// on the repository.
func (r *Runner) diff(ctx context.Context, repo *gitsyncv1.GitRepository, req Request, forgeType string) ([]operations.AppDiff, string, error) {
	apps, err := operations.AppsOf(ctx, r.Client, client.ObjectKeyFromObject(repo))
	if err != nil {
		return nil, "", err
	}
	if repo.Spec.SecretRef != nil && r.SecretAccess != nil {
		if err := r.SecretAccess.CheckSecret(ctx, repo.Namespace, repo.Spec.SecretRef.Name); err != nil {
			return nil, "", fmt.Errorf("reading Secret %s: %w", repo.Spec.SecretRef.Name, err)
		}
	}
	tmp, err := os.MkdirTemp(r.TempDir, "gitsync-preview-")
	if err != nil {
		return nil, "", fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetcher, err := source.NewFetcherWithOptions(tmp, r.Fetch)
	if err != nil {
		return nil, "", err
	}
	ref := source.Ref{Branch: req.HeadBranch, Commit: source.CommitOf(req.HeadSHA)}
	if req.Fork {
		// A fork's branch is not in this repository: the forge keeps the head under a
		// ref of its own in the base repository.
		ref.Branch = PullRef(forgeType, req.Number)
	}
	request, err := sourceid.GitRequest(ctx, r.Secrets, repo, ref)
	if err != nil {
		return nil, "", fmt.Errorf("reading the repository's credentials: %w", err)
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		return nil, "", fmt.Errorf("fetching %s: %w", ref, err)
	}
	head := operations.Head{Key: client.ObjectKeyFromObject(repo), Root: artifact.Dir, Revision: artifact.Revision,
		Others: r.currentCheckouts(fetcher)}
	diffs := operations.DiffAppsAt(ctx, apps, head, r.actor, r.Render)
	return diffs, artifact.Revision, nil
}

// currentCheckouts fetches, with fetcher, the current artifact of another GitRepository
// an Application of the preview reads too (one of spec.sources, a values source): with
// that repository's credentials, once tenant mode allows reading them.
func (r *Runner) currentCheckouts(fetcher *source.Fetcher) operations.GitCheckouts {
	return func(ctx context.Context, key client.ObjectKey) (string, string, error) {
		other := &gitsyncv1.GitRepository{}
		if err := r.Client.Get(ctx, key, other); err != nil {
			return "", "", fmt.Errorf("reading GitRepository %s: %w", key, err)
		}
		if other.Spec.SecretRef != nil && r.SecretAccess != nil {
			if err := r.SecretAccess.CheckSecret(ctx, other.Namespace, other.Spec.SecretRef.Name); err != nil {
				return "", "", fmt.Errorf("reading Secret %s: %w", other.Spec.SecretRef.Name, err)
			}
		}
		ref, rev, err := operations.CurrentRef(other)
		if err != nil {
			return "", "", err
		}
		request, err := sourceid.GitRequest(ctx, r.Secrets, other, ref)
		if err != nil {
			return "", "", fmt.Errorf("reading the credentials of %s: %w", key, err)
		}
		artifact, err := fetcher.Fetch(ctx, request)
		if err != nil {
			return "", "", fmt.Errorf("fetching %s of %s: %w", rev, key, err)
		}
		return artifact.Dir, rev, nil
	}
}

// PullRef is the ref under which a forge keeps pull request number's head in the base
// repository: GitHub's and Gitea's refs/pull/N/head, GitLab's refs/merge-requests/N/head.
func PullRef(forgeType string, number int) string {
	if forgeType == gitsyncv1.ProviderGitLab {
		return fmt.Sprintf("refs/merge-requests/%d/head", number)
	}
	return fmt.Sprintf("refs/pull/%d/head", number)
}

// actor is who renders and dry-runs app: the Application's own identity (its service
// account, impersonated), never with decryption keys.
func (r *Runner) actor(app *gitsyncv1.Application) (operations.Actor, error) {
	m, err := r.ApplyFor(app)
	if err != nil {
		return operations.Actor{}, err
	}
	c := m.Client()
	return operations.Actor{Client: c, Cluster: render.ClusterOf(app.Namespace, c.RESTMapper(), func() (client.Client, error) { return c, nil }, false)}, nil
}

// forgeClient is the client of the repository's spec.preview.providerRef (forge.Providers).
func (r *Runner) forgeClient(ctx context.Context, repo *gitsyncv1.GitRepository) (*forge.Client, error) {
	ps := forge.Providers{Client: r.Client, Secrets: r.Secrets, Egress: r.Egress, SecretAccess: r.SecretAccess}
	return ps.For(ctx, repo.Namespace, repo.Spec.Preview.ProviderRef.Name, "gitsync-preview")
}
