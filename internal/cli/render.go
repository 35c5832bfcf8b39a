package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/controller"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// rendered is an Application's objects and where they came from.
type rendered struct {
	objects []*unstructured.Unstructured
	// from describes the origin: "revision main@sha1:..." or "local path DIR".
	from string
}

// renderLocal builds dir (the directory to build, in place of spec.path), confined to
// the Git worktree that holds dir (so an overlay may use ../base), or to dir itself.
func renderLocal(dir string, app *gitsyncv1.Application, isNamespaced func(schema.GroupKind) (bool, error)) (*rendered, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving --path %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--path %s is not a directory", dir)
	}
	root := worktreeRoot(abs)
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, fmt.Errorf("resolving --path %s: %w", dir, err)
	}
	objs, err := controller.Render(root, "./"+filepath.ToSlash(rel), app, isNamespaced)
	if err != nil {
		return nil, err
	}
	return &rendered{objects: objs, from: "local path " + dir}, nil
}

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
// artifact) of the Application's GitRepository into a temporary directory with
// internal/source, and builds spec.path of it.
func renderFromSource(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string,
	isNamespaced func(schema.GroupKind) (bool, error)) (*rendered, error) {
	key := client.ObjectKey{Namespace: app.Spec.SourceRef.Namespace, Name: app.Spec.SourceRef.Name}
	if key.Namespace == "" {
		key.Namespace = app.Namespace
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		if revision != "" {
			return nil, fmt.Errorf("revision %q: a HelmRepository chart renders at the version spec.helm.version selects", revision)
		}
		objs, rev, err := controller.RenderChart(ctx, c, app, isNamespaced)
		if err != nil {
			return nil, err
		}
		return &rendered{objects: objs, from: "revision " + rev}, nil
	}
	repo := &gitsyncv1.GitRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, fmt.Errorf("reading source GitRepository %s: %w", key, err)
	}
	if revision == "" {
		if repo.Status.Artifact == nil {
			return nil, fmt.Errorf("source GitRepository %s has no artifact yet", key)
		}
		revision = repo.Status.Artifact.Revision
	}
	commit := source.CommitOf(revision)
	if commit == "" {
		return nil, fmt.Errorf("revision %q names no commit (want <ref>@sha1:<40 hex>)", revision)
	}
	var auth *source.Auth
	if repo.Spec.SecretRef != nil {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}, secret); err != nil {
			return nil, fmt.Errorf("reading the credentials of %s (Secret %s): %w", key, repo.Spec.SecretRef.Name, err)
		}
		a, err := source.AuthFromSecret(secret.Data)
		if err != nil {
			return nil, fmt.Errorf("credentials of %s (Secret %s): %w", key, repo.Spec.SecretRef.Name, err)
		}
		auth = a
	}
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetcher, err := source.NewFetcher(tmp)
	if err != nil {
		return nil, err
	}
	ref := source.Ref{Commit: commit}
	if repo.Spec.Ref != nil {
		ref.Branch = repo.Spec.Ref.Branch
	}
	var ignore []string
	if repo.Spec.Ignore != "" {
		ignore = []string{repo.Spec.Ignore}
	}
	artifact, err := fetcher.Fetch(ctx, source.Request{URL: repo.Spec.URL, Ref: ref, Auth: auth, Ignore: ignore, Timeout: repo.GetTimeout().Duration})
	if err != nil {
		return nil, fmt.Errorf("fetching %s of %s: %w", revision, key, err)
	}
	path := app.Spec.Path
	if path == "" {
		path = "./"
	}
	objs, err := controller.Render(artifact.Dir, path, app, isNamespaced)
	if err != nil {
		return nil, fmt.Errorf("at %s: %w", revision, err)
	}
	return &rendered{objects: objs, from: "revision " + revision}, nil
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

// clusterScoped are the built-in cluster-scoped kinds, for rendering without a cluster;
// any other kind is taken as namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                    true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                              true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                    true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                           true,
}

func offlineScope(gk schema.GroupKind) (bool, error) { return !clusterScoped[gk], nil }

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
