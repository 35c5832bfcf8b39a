package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// rendered is an Application's objects and where they came from.
type rendered struct {
	objects []*unstructured.Unstructured
	// from describes the origin: "revision main@sha1:..." or "local path DIR", and
	// says when the render had no cluster or left SOPS-encrypted content encrypted.
	from string
	// encrypted names what was left SOPS-encrypted (without --decrypt).
	encrypted []string
	// sensitive are the values every output masks (see render.Result.Sensitive).
	sensitive []string
}

func newRendered(res *render.Result, from string) *rendered {
	if res.Offline {
		from += " (offline: no cluster; a chart saw Helm's default capabilities and lookup found nothing)"
	}
	if len(res.Encrypted) > 0 {
		from += fmt.Sprintf(" (%s left encrypted and not compared: %s; --decrypt decrypts them with your rights to the decryption Secret)",
			encryptedCount(res.Encrypted), strings.Join(res.Encrypted, ", "))
	}
	return &rendered{objects: res.Objects, from: from, encrypted: res.Encrypted, sensitive: res.Sensitive}
}

// encryptedCount counts what a render left SOPS-encrypted (render.Result.Encrypted: a
// file, and the objects made of it, once): "1 SOPS-encrypted file", "2 ... files or
// documents".
func encryptedCount(encrypted []string) string {
	if len(encrypted) == 1 {
		return "1 SOPS-encrypted file or document"
	}
	return fmt.Sprintf("%d SOPS-encrypted files or documents", len(encrypted))
}

// clusterOf is what a render takes from the cluster, read as the person running the
// command: capabilities from discovery (when cfg is known), valuesFrom, substituteFrom,
// — with lookup (--lookup) — Helm's lookup, and — with decrypt (--decrypt) — the
// decryption Secret with the kubeconfig's identity, kinds' scopes from c's RESTMapper.
// A nil c renders offline. Without lookup a chart's lookup finds nothing: the chart is
// a tenant's code, and the person running diff, build or the UI is often a cluster
// admin, whose lookup would read what the tenant may not (another namespace's Secrets)
// into the output. The operator's own sync looks up as the Application's account.
func clusterOf(cfg *rest.Config, c client.Client, app *gitsyncv1.Application, decrypt, lookup bool) *render.Cluster {
	if c == nil {
		return nil
	}
	cl := &render.Cluster{IsNamespaced: mapperScope(c.RESTMapper())}
	cl.Values = func(ctx context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
		return render.ReadValuesFrom(ctx, c, app.Namespace, ref)
	}
	cl.Variables = func(ctx context.Context, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
		return render.ReadSubstituteFrom(ctx, c, app.Namespace, ref)
	}
	if decrypt {
		cl.Keys = func(ctx context.Context, name string) (sops.KeySource, error) {
			return render.ReadKeys(ctx, c, app.Namespace, name)
		}
	}
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

// addLookupFlag is --lookup of diff and build.
func addLookupFlag(cmd *cobra.Command, lookup *bool) {
	cmd.Flags().BoolVar(lookup, "lookup", false,
		"let a chart's lookup read the cluster with your rights (default: lookup finds nothing; a tenant's chart could otherwise read what you may and the Application may not)")
}

// renderLocal renders dir (the directory to render, in place of spec.path), confined to
// the Git worktree that holds dir (so an overlay may use ../base), or to dir itself.
// Without decrypt, SOPS-encrypted content is left encrypted (render.Source.KeepEncrypted).
func renderLocal(ctx context.Context, local localPath, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool) (*rendered, error) {
	dir := local.Dir
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving --path %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--path %s is not a directory", dir)
	}
	root := worktreeRoot(abs)
	if local.Root != "" {
		if root, err = filepath.Abs(local.Root); err != nil {
			return nil, fmt.Errorf("resolving --root %s: %w", local.Root, err)
		}
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("--path %s is not inside --root %s", dir, local.Root)
	}
	res, err := render.Render(ctx, app, render.Source{Root: root, Path: "./" + filepath.ToSlash(rel), KeepEncrypted: !decrypt}, cluster)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	return newRendered(res, "local path "+dir), nil
}

// localPath is a directory to render in place of the source's revision (--path), and
// the root the render is confined to (--root; "": the Git worktree holding Dir, else Dir).
type localPath struct{ Dir, Root string }

// worktreeRoot returns the nearest directory at or above dir holding .git, or dir.
func worktreeRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// renderFromSource fetches the commit of revision (default: the source's current
// artifact) of the Application's GitRepository into a temporary directory, or its
// HelmRepository chart into a temporary cache, and renders it as a sync would (without
// decrypt, SOPS-encrypted content left encrypted).
func renderFromSource(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool) (*rendered, error) {
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		if revision != "" {
			return nil, fmt.Errorf("revision %q: a HelmRepository chart renders at the version spec.helm.version selects", revision)
		}
		return renderChart(ctx, c, app, cluster, decrypt)
	}
	return renderGitRef(ctx, c, app, cluster, decrypt, func(repo *gitsyncv1.GitRepository) (source.Ref, string, error) {
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

// renderAtRevision renders the Application at revision of its GitRepository: a branch
// name (its head now), `<branch>@sha1:<commit>` (a commit of that branch) or a commit
// alone (40 hex digits; it must be in the branch the GitRepository follows). A chart of
// a HelmRepository has no such revision.
func renderAtRevision(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool) (*rendered, error) {
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		return nil, fmt.Errorf("revision %q: a HelmRepository chart renders at the version spec.helm.version selects", revision)
	}
	return renderGitRef(ctx, c, app, cluster, decrypt, func(repo *gitsyncv1.GitRepository) (source.Ref, string, error) {
		revision := strings.TrimSpace(revision)
		ref := source.Ref{Branch: revision}
		if commit := source.CommitOf(revision); commit != "" {
			// The fetch checks that the commit is in the branch: the one the revision
			// names, else the one the GitRepository follows (else the default branch).
			ref = source.Ref{Commit: commit}
			if branch, _, ok := strings.Cut(revision, "@"); ok && branch != "" {
				ref.Branch = branch
			} else if repo.Spec.Ref != nil {
				ref.Branch = repo.Spec.Ref.Branch
			}
		}
		return ref, "", nil
	})
}

// renderChart downloads the Application's HelmRepository chart into a temporary cache
// and renders it.
func renderChart(ctx context.Context, c client.Client, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool) (*rendered, error) {
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	store, err := chartrepo.New(tmp)
	if err != nil {
		return nil, err
	}
	archive, rev, err := render.LocateChart(ctx, c, app, store)
	if err != nil {
		return nil, err
	}
	res, err := render.Render(ctx, app, render.Source{Archive: archive, KeepEncrypted: !decrypt}, cluster)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", rev, err)
	}
	return newRendered(res, "revision "+rev), nil
}

// renderGitRef reads the Application's GitRepository, fetches the ref refOf picks of it
// (with the label it names it by; "" for the fetched revision) into a temporary
// directory and renders the Application's path from it.
func renderGitRef(ctx context.Context, c client.Client, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool,
	refOf func(*gitsyncv1.GitRepository) (source.Ref, string, error)) (*rendered, error) {
	key := render.SourceKey(app)
	repo := &gitsyncv1.GitRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, fmt.Errorf("reading source GitRepository %s: %w", key, err)
	}
	ref, label, err := refOf(repo)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	request, err := render.GitRequest(ctx, c, repo, ref)
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of %s: %w", key, err)
	}
	fetcher, err := source.NewFetcher(tmp)
	if err != nil {
		return nil, err
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		if label == "" {
			label = ref.String()
		}
		return nil, fmt.Errorf("fetching %s of %s: %w", label, key, err)
	}
	if label == "" {
		label = artifact.Revision
	}
	res, err := render.Render(ctx, app, render.Source{Root: artifact.Dir, Path: app.Spec.Path, KeepEncrypted: !decrypt}, cluster)
	if err != nil {
		return nil, fmt.Errorf("building %s at %s: %w", pathOrDot(app.Spec.Path), label, err)
	}
	return newRendered(res, "revision "+label), nil
}

func pathOrDot(p string) string {
	if p == "" {
		return "./"
	}
	return p
}

// mapperScope tells the scope of a kind from the cluster's discovery.
func mapperScope(m meta.RESTMapper) func(schema.GroupKind) (bool, error) {
	return func(gk schema.GroupKind) (bool, error) {
		mapping, err := m.RESTMapping(gk)
		if err != nil {
			return false, err
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
}

// readApplication reads the Application called name from a YAML/JSON file (which may
// hold several documents); an empty name takes the first Application.
func readApplication(file, name string) (*gitsyncv1.Application, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading --from-file: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		if doc["kind"] != gitsyncv1.ApplicationKind {
			continue
		}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		app := &gitsyncv1.Application{}
		if err := yaml.UnmarshalStrict(raw, app); err != nil {
			return nil, fmt.Errorf("decoding the Application in %s: %w", file, err)
		}
		if name == "" || app.Name == name {
			return app, nil
		}
	}
	return nil, fmt.Errorf("%s holds no Application named %q", file, name)
}
