// Package build renders the path of a Git checkout into Kubernetes objects: with
// kustomize (in process) when the path holds a kustomization, else by reading the
// YAML and JSON manifests below it. It needs no API server.
//
// A build is confined to the checkout: nothing outside it is read (through "..",
// absolute paths or symlinks), nothing is fetched over the network (remote bases and
// resources are refused), nothing is executed (kustomize exec plugins, KRM functions
// and helm are off) and nothing is written.
package build

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

// ErrPathNotFound is wrapped by the error for a path that is not in the checkout.
var ErrPathNotFound = errors.New("path does not exist in the checkout")

// kustomizeMu serialises kustomize runs: krusty keeps the OpenAPI schema in package
// state (openapi.SetSchema), which concurrent builds would race on.
var kustomizeMu sync.Mutex

// Build renders path (relative to root, e.g. "./", "apps/demo/overlays/dev") of a
// checkout at root. With a kustomization file (kustomization.yaml, kustomization.yml
// or Kustomization) in that directory it runs kustomize in process
// (sigs.k8s.io/kustomize/api/krusty); otherwise it reads every *.yaml, *.yml and
// *.json file under the path recursively (multi-document YAML too, empty documents
// skipped; a `kind: List` / `v1/List` is flattened into its items), in a
// deterministic order (sorted by file path, then document order). Hidden files and
// directories (names starting with ".") are skipped.
//
// A leading "/" in path means the checkout root. A path, resource or symlink that
// resolves outside root is an *OutsideError; remote bases and resources wrap
// ErrRemoteNotAllowed; helm charts, exec plugins and KRM functions wrap
// ErrPluginsDisabled. Errors name files relative to root.
//
// It returns the objects (each with apiVersion, kind and metadata.name, else an error
// naming the file) in render order: kustomize's order (its legacy kind order unless
// the kustomization sets sortOptions), or file then document order.
func Build(root, path string) ([]*unstructured.Unstructured, error) {
	return BuildWith(root, path, Options{})
}

// BuildWith is Build with opts.
func BuildWith(root, path string, opts Options) ([]*unstructured.Unstructured, error) {
	absRoot, err := canonicalRoot(root)
	if err != nil {
		return nil, err
	}
	// Errors name files (and the path) relative to root but do not say "building PATH":
	// every caller says what it was building (the path at a revision, a local --path).
	dir, err := resolvePath(absRoot, path)
	if err != nil {
		return nil, err
	}
	fsys, err := newConfinedFS(absRoot)
	if err != nil {
		return nil, err
	}
	fsys.filter = opts.Filter
	if kustomizationFile(dir) != "" {
		return buildKustomize(fsys, absRoot, dir)
	}
	return buildPlain(absRoot, dir, opts.Filter)
}

// canonicalRoot returns root as an absolute path with symlinks resolved: the form
// every containment check compares against.
func canonicalRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("resolving checkout root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolving checkout root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("resolving checkout root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("checkout root %s is not a directory", root)
	}
	return real, nil
}

// resolvePath returns the directory path names below root, with symlinks resolved.
func resolvePath(root, path string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(path))
	if filepath.IsAbs(clean) {
		clean = strings.TrimLeft(clean, string(filepath.Separator))
		if clean == "" {
			clean = "."
		}
	}
	if !filepath.IsLocal(clean) {
		return "", &OutsideError{Path: filepath.ToSlash(clean)}
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, clean))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %q", ErrPathNotFound, filepath.ToSlash(clean))
	}
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", filepath.ToSlash(clean), withoutPath(err))
	}
	if !within(root, real) {
		return "", &OutsideError{Path: filepath.ToSlash(clean)}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", filepath.ToSlash(clean), withoutPath(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory", filepath.ToSlash(clean))
	}
	return real, nil
}

// kustomizeOptions are krusty's options for a build confined to a checkout.
func kustomizeOptions() *krusty.Options {
	opts := krusty.MakeDefaultOptions()
	// What `kustomize build` does: the legacy kind order unless the kustomization
	// sets sortOptions.
	opts.Reorder = krusty.ReorderOptionUnspecified
	// The confined file system is the boundary (the checkout), as in Flux: an overlay
	// may use ../base/patch.yaml, which the root-only restriction would refuse.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	// Builtin plugins only, statically linked: no exec or Go plugins, no KRM functions.
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.HelmConfig.Enabled = false
	opts.AddManagedbyLabel = false
	return opts
}

// buildKustomize runs kustomize on dir after checking the kustomizations it loads.
func buildKustomize(fsys confinedFS, root, dir string) ([]*unstructured.Unstructured, error) {
	rel := relToRoot(root, dir)
	c := newChecker(fsys, root)
	if err := c.dir(dir, false); err != nil {
		return nil, err
	}
	if err := c.loads(dir); err != nil {
		return nil, err
	}
	out, err := runKustomize(fsys, dir)
	if err != nil && fsys.budget.refused != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", rel, fsys.budget.refused)
	}
	if err != nil {
		return nil, relativeError(root, fixYAMLLine(fmt.Errorf("kustomize build %s: %w", rel, err)))
	}
	if len(out) > MaxRenderSize {
		return nil, fmt.Errorf("kustomize build %s: the output is %s, over the %s limit for one build: %w",
			rel, mib(int64(len(out))), mib(MaxRenderSize), ErrTooLarge)
	}
	// Its output is counted afresh: its inputs were, but bases used twice are built twice.
	return decodeManifests("kustomize build "+rel, out, newBudget(maxRenderValues))
}

// runKustomize runs krusty on dir and returns its output as YAML.
func runKustomize(fsys confinedFS, dir string) (out []byte, err error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	defer func() {
		// kustomize has panicked on malformed input before; a bad commit must not
		// take the operator down.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	resMap, err := krusty.MakeKustomizer(kustomizeOptions()).Run(fsys, dir)
	if err != nil {
		return nil, err
	}
	return resMap.AsYaml()
}

// relativeError shortens the absolute paths kustomize prints to paths relative to
// the checkout, keeping err for errors.Is and errors.As, and redacts the values it
// quotes (see redactError).
func relativeError(root string, err error) error {
	msg := strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, root, ".")
	return redactMessage(msg, err)
}
