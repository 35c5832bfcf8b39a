package operations

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Rendered is an Application's objects and where they came from.
type Rendered struct {
	Objects []*unstructured.Unstructured
	// From describes the origin: "revision main@sha1:..." or "local path DIR", and
	// says when the render had no cluster or left SOPS-encrypted content encrypted.
	From string
	// Encrypted names what was left SOPS-encrypted (without decrypt).
	Encrypted []string
	// Sensitive are the values every output masks (see render.Result.Sensitive).
	Sensitive []string
	// Revision is the revision rendered (every source's, joined, with spec.sources: see
	// gitsyncv1.JoinRevisions); ValuesRevisions are the revisions of the sources of
	// helm.valuesFilesFrom read, as `GitRepository/<name>@<revision>`. Empty for a local
	// path.
	Revision        string
	ValuesRevisions []string
}

// NewRendered is res rendered from (a description of the origin).
func NewRendered(res *render.Result, from string) *Rendered {
	if res.Offline {
		from += " (offline: no cluster; a chart saw Helm's default capabilities and lookup found nothing)"
	}
	if len(res.Encrypted) > 0 {
		from += fmt.Sprintf(" (%s left encrypted and not compared: %s; --decrypt decrypts them with your rights to the decryption Secret)",
			EncryptedCount(res.Encrypted), strings.Join(res.Encrypted, ", "))
	}
	return &Rendered{Objects: res.Objects, From: from, Encrypted: res.Encrypted, Sensitive: res.Sensitive}
}

// EncryptedCount counts what a render left SOPS-encrypted (render.Result.Encrypted: a
// file, and the objects made of it, once): "1 SOPS-encrypted file", "2 ... files or
// documents".
func EncryptedCount(encrypted []string) string {
	if len(encrypted) == 1 {
		return "1 SOPS-encrypted file or document"
	}
	return fmt.Sprintf("%d SOPS-encrypted files or documents", len(encrypted))
}

// Cluster is what a person's render of app takes from the cluster, read as that person
// (render.ClusterOf over c): capabilities from discovery (when cfg is known),
// valuesFrom, substituteFrom, — with lookup — Helm's lookup, and — with decrypt — the
// decryption Secret. A nil c renders offline. Without lookup a chart's lookup finds
// nothing: the chart is a tenant's code, and the person running diff, build or the UI
// is often a cluster admin, whose lookup would read what the tenant may not (another
// namespace's Secrets) into the output. The operator's own sync looks up as the
// Application's account.
func Cluster(cfg *rest.Config, c client.Client, app *gitsyncv1.Application, decrypt, lookup bool) *render.Cluster {
	if c == nil {
		return nil
	}
	cl := render.ClusterOf(app.Namespace, c.RESTMapper(), func() (client.Client, error) { return c, nil }, decrypt)
	if cfg != nil {
		if dc, err := discovery.NewDiscoveryClientForConfig(cfg); err == nil {
			cl.Discovery = memory.NewMemCacheClient(dc)
		}
		if lookup {
			cl.Lookup = (&render.LookupClients{}).Provider(cfg, c.RESTMapper(), "")
		}
	}
	return cl
}

// RenderFromSource fetches the commit of revision (default: the source's current
// artifact) of the Application's GitRepository into a temporary directory, or its
// HelmRepository chart into a temporary cache, and renders it as a sync would (without
// decrypt, SOPS-encrypted content left encrypted), with the values files of
// helm.valuesFilesFrom from their GitRepositories' current artifacts. With spec.sources
// every source renders at its current artifact (render_sources.go).
func RenderFromSource(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool) (*Rendered, error) {
	values, err := fetchValuesSources(ctx, c, app) // render_sources.go
	defer values.cleanup()
	if err != nil {
		return nil, err
	}
	if app.MultiSource() {
		if revision != "" {
			return nil, fmt.Errorf("revision %q: an Application of spec.sources renders at its sources' current artifacts", revision)
		}
		return renderSources(ctx, c, app, cluster, decrypt, values)
	}
	r, err := renderSourceAt(ctx, c, app, revision, cluster, decrypt, values.roots)
	if err != nil {
		return nil, err
	}
	r.ValuesRevisions = values.revisions
	return r, nil
}

// renderSourceAt is RenderFromSource for one source (spec.sourceRef, or one of
// spec.sources as Application.ForSource makes it), with the values checkouts given.
func renderSourceAt(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool,
	roots map[string]string) (*Rendered, error) {
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		if revision != "" {
			return nil, fmt.Errorf("revision %q: a HelmRepository chart renders at the version spec.helm.version selects", revision)
		}
		return renderChart(ctx, c, app, cluster, decrypt, roots)
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.OCIRepositoryKind {
		return renderOCI(ctx, c, app, revision, cluster, decrypt, roots) // render_oci.go
	}
	return renderGitRef(ctx, c, app, cluster, decrypt, roots, func(repo *gitsyncv1.GitRepository) (source.Ref, string, error) {
		rev := revision
		if rev == "" {
			if repo.Status.Artifact == nil {
				return source.Ref{}, "", fmt.Errorf("source GitRepository %s has no artifact yet", client.ObjectKeyFromObject(repo))
			}
			rev = repo.Status.Artifact.Revision
		}
		commit := source.CommitOf(rev)
		if commit == "" {
			return source.Ref{}, "", fmt.Errorf("revision %q names no commit (want <ref>@sha1:<40 hex>)", rev)
		}
		ref := source.Ref{Commit: commit}
		if repo.Spec.Ref != nil {
			ref.Branch = repo.Spec.Ref.Branch
		}
		return ref, rev, nil
	})
}

// RenderAtRevision renders the Application at revision of its GitRepository: a branch
// name (its head now), `<branch>@sha1:<commit>` (a commit of that branch) or a commit
// alone (40 hex digits; it must be in the branch the GitRepository follows). A chart of
// a HelmRepository has no such revision, nor has an Application of several sources.
func RenderAtRevision(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool) (*Rendered, error) {
	if app.MultiSource() {
		return nil, fmt.Errorf("revision %q: an Application of spec.sources renders at its sources' current artifacts (gitsync diff app without --revision)", revision)
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		return nil, fmt.Errorf("revision %q: a HelmRepository chart renders at the version spec.helm.version selects", revision)
	}
	values, err := fetchValuesSources(ctx, c, app) // render_sources.go
	defer values.cleanup()
	if err != nil {
		return nil, err
	}
	var r *Rendered
	if app.Spec.SourceRef.Kind == gitsyncv1.OCIRepositoryKind {
		r, err = renderOCI(ctx, c, app, strings.TrimSpace(revision), cluster, decrypt, values.roots)
	} else {
		r, err = renderGitRef(ctx, c, app, cluster, decrypt, values.roots, func(repo *gitsyncv1.GitRepository) (source.Ref, string, error) {
			return RevisionRef(repo, revision), "", nil
		})
	}
	if err != nil {
		return nil, err
	}
	r.ValuesRevisions = values.revisions
	return r, nil
}

// renderChart downloads the Application's HelmRepository chart into a temporary cache
// and renders it.
func renderChart(ctx context.Context, c client.Client, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool, roots map[string]string) (*Rendered, error) {
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	store, err := chartrepo.New(tmp)
	if err != nil {
		return nil, err
	}
	archive, rev, err := sourceid.LocateChart(ctx, c, app, store)
	if err != nil {
		return nil, err
	}
	res, err := render.Render(ctx, app, render.Source{Archive: archive, KeepEncrypted: !decrypt, ValuesRoots: roots}, cluster)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", rev, err)
	}
	r := NewRendered(res, "revision "+rev)
	r.Revision = rev
	return r, nil
}

// renderGitRef reads the Application's GitRepository, fetches the ref refOf picks of it
// (with the label it names it by; "" for the fetched revision) into a temporary
// directory and renders the Application's path from it.
func renderGitRef(ctx context.Context, c client.Client, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool,
	roots map[string]string, refOf func(*gitsyncv1.GitRepository) (source.Ref, string, error)) (*Rendered, error) {
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	artifact, label, err := fetchGit(ctx, c, sourceid.Key(app), tmp, refOf)
	if err != nil {
		return nil, err
	}
	res, err := render.Render(ctx, app, render.Source{Root: artifact.Dir, Path: app.Spec.Path, KeepEncrypted: !decrypt, ValuesRoots: roots}, cluster)
	if err != nil {
		return nil, fmt.Errorf("building %s at %s: %w", PathOrDot(app.Spec.Path), label, err)
	}
	r := NewRendered(res, "revision "+label)
	r.Revision = label
	return r, nil
}

// fetchGit reads the GitRepository key and fetches the ref refOf picks of it (with the
// label it names it by; "" for the fetched revision) into tmp, with its credentials.
func fetchGit(ctx context.Context, c client.Client, key client.ObjectKey, tmp string,
	refOf func(*gitsyncv1.GitRepository) (source.Ref, string, error)) (*source.Artifact, string, error) {
	repo := &gitsyncv1.GitRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, "", fmt.Errorf("reading source GitRepository %s: %w", key, err)
	}
	ref, label, err := refOf(repo)
	if err != nil {
		return nil, "", err
	}
	request, err := sourceid.GitRequest(ctx, c, repo, ref)
	if err != nil {
		return nil, "", fmt.Errorf("reading the credentials of %s: %w", key, err)
	}
	fetcher, err := source.NewFetcher(tmp)
	if err != nil {
		return nil, "", err
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		if label == "" {
			label = ref.String()
		}
		return nil, "", fmt.Errorf("fetching %s of %s: %w", label, key, err)
	}
	if label == "" {
		label = artifact.Revision
	}
	return artifact, label, nil
}

// PathOrDot is spec.path as a person reads it ("./" when empty).
func PathOrDot(p string) string {
	if p == "" {
		return "./"
	}
	return p
}
