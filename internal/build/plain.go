package build

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// manifestExts are the file name extensions read from a plain directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// ErrCheckoutChanged is wrapped by the error for a file or directory that vanished
// while a build read the checkout (a checkout being removed): what was read is not
// the commit, so nothing of it may be applied.
var ErrCheckoutChanged = errors.New("the checkout changed while it was read")

// testHookListed, when set by a test, runs after each directory is listed.
var testHookListed func(realDir string)

// manifestFile is a file or directory found by the plain walk.
type manifestFile struct {
	rel  string // where it is in the checkout, slash-separated: what errors show
	real string // the absolute path to read, symlinks resolved
}

// plainWalk collects what buildPlain reads below a directory.
type plainWalk struct {
	root    string
	files   []manifestFile // manifests to read
	dirs    []manifestFile // directories listed
	charts  []string       // Chart.yaml files: Helm charts, not manifests
	jsonnet []string       // .jsonnet and .libsonnet files
}

// buildPlain reads the manifests below dir (an absolute path inside root, symlinks
// resolved), ordered by their path in the checkout, then by document. Every file's
// size is checked against MaxFileSize and MaxRenderSize before any is parsed.
func buildPlain(root, dir string, filter Filter) ([]*unstructured.Unstructured, error) {
	w := &plainWalk{root: root}
	rel := relToRoot(root, dir)
	if err := w.collect(dir, rel, []string{dir}); err != nil {
		return nil, err
	}
	if err := w.unsupported(); err != nil {
		return nil, err
	}
	slices.SortFunc(w.files, func(a, b manifestFile) int { return cmp.Compare(a.rel, b.rel) })

	b := newBudget(maxRenderValues)
	for _, f := range w.files {
		fi, err := os.Stat(f.real)
		if err != nil {
			return nil, readError(f.rel, err)
		}
		if err := b.admit(f.rel, fi.Size()); err != nil {
			return nil, err
		}
	}
	var objs []*unstructured.Unstructured
	seen := map[string]string{} // object id -> file that had it first
	for _, f := range w.files {
		data, err := readPlain(b, f)
		if err != nil {
			return nil, err
		}
		if filter != nil {
			if data, err = filter(f.rel, data); err != nil {
				return nil, err
			}
		}
		if err := prescan(f.rel, data); err != nil {
			return nil, err
		}
		fileObjs, err := decodeManifests(f.rel, data, b)
		if err != nil {
			return nil, err
		}
		for _, obj := range fileObjs {
			id := objectID(obj)
			if first, dup := seen[id]; dup {
				return nil, fmt.Errorf("%s: %s is also defined in %s", f.rel, id, first)
			}
			seen[id] = f.rel
		}
		objs = append(objs, fileObjs...)
	}
	if err := w.stillThere(); err != nil {
		return nil, err
	}
	if len(objs) == 0 && len(w.jsonnet) > 0 {
		return nil, fmt.Errorf("%s holds no Kubernetes manifests (%s files) but %s: jsonnet is not supported, "+
			"commit the rendered YAML or a kustomization instead", rel, strings.Join(manifestExts, ", "), listFiles(w.jsonnet, "jsonnet"))
	}
	return objs, nil
}

func readPlain(b *budget, f manifestFile) ([]byte, error) {
	file, err := os.Open(f.real)
	if err != nil {
		return nil, readError(f.rel, err)
	}
	defer file.Close()
	return b.read(file, f.rel)
}

// readError reports a file that cannot be read; one that no longer exists means the
// checkout is being removed.
func readError(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: it vanished: %w", rel, ErrCheckoutChanged)
	}
	return fmt.Errorf("reading %s: %w", rel, withoutPath(err))
}

// stillThere checks, after everything was read, that every directory listed and every
// file read still exists. A checkout is removed children first, so a directory that a
// concurrent removal had emptied before it was listed is gone by now, or soon after.
func (w *plainWalk) stillThere() error {
	for _, f := range slices.Concat(w.dirs, w.files) {
		if _, err := os.Lstat(f.real); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s vanished while the build read it: %w", f.rel, ErrCheckoutChanged)
		}
	}
	return nil
}

// unsupported refuses a walk that found a Helm chart, with a message saying why
// nothing of it renders, and a kustomization below the path, before anything is parsed.
func (w *plainWalk) unsupported() error {
	if len(w.charts) > 0 {
		return fmt.Errorf("%s holds a Helm chart (%s): a chart is rendered when it is the Application's path itself; "+
			"set spec.path to %s (a kustomization's helmCharts are refused)", w.charts[0], path.Base(w.charts[0]), path.Dir(w.charts[0]))
	}
	for _, f := range w.files {
		if slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(f.rel)) {
			return fmt.Errorf("%s is a kustomize file, not a Kubernetes object: "+
				"only the Application's path itself is built with kustomize, so point the path at its directory", f.rel)
		}
	}
	return nil
}

// listFiles names files (at most three) for a message: "2 jsonnet files (a, b)".
func listFiles(files []string, what string) string {
	shown := files[:min(3, len(files))]
	more := ""
	if len(files) > len(shown) {
		more = ", ..."
	}
	noun := "file"
	if len(files) > 1 {
		noun = "files"
	}
	return fmt.Sprintf("%d %s %s (%s%s)", len(files), what, noun, strings.Join(shown, ", "), more)
}

// collect adds the manifest files below realDir (shown as relDir) to the walk.
// Symlinks are followed only when they stay inside root; a symlink that the walk
// would use (a directory, or a manifest file) and that leaves root is an error.
// Hidden files and directories (".github", ".gitlab-ci.yml") are skipped: they hold CI
// and tool configuration, not objects. stack holds the real paths of the directories
// being walked, to stop at a symlink cycle. An entry that vanishes between the
// listing and its use is an error wrapping ErrCheckoutChanged.
func (w *plainWalk) collect(realDir, relDir string, stack []string) error {
	entries, err := os.ReadDir(realDir)
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", relDir, vanished(err))
	}
	w.dirs = append(w.dirs, manifestFile{rel: relDir, real: realDir})
	if testHookListed != nil {
		testHookListed(realDir)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		rel := path.Join(relDir, name)
		real := filepath.Join(realDir, name)
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(real)
			if err != nil {
				if _, lerr := os.Lstat(real); errors.Is(lerr, fs.ErrNotExist) {
					return readError(rel, lerr)
				}
				if isManifest(name) {
					return fmt.Errorf("reading %s: broken symlink", rel)
				}
				continue
			}
			fi, err := os.Stat(target)
			if err != nil {
				return readError(rel, err)
			}
			isDir = fi.IsDir()
			if !isDir && (!isManifest(name) || !fi.Mode().IsRegular()) {
				continue
			}
			if !within(w.root, target) {
				return &OutsideError{Path: rel}
			}
			real = target
		}
		switch {
		case isDir:
			if slices.Contains(stack, real) {
				return fmt.Errorf("reading %s: symlink cycle", rel)
			}
			if err := w.collect(real, rel, append(stack, real)); err != nil {
				return err
			}
		case e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0:
			switch {
			case name == "Chart.yaml":
				w.charts = append(w.charts, rel)
			case isManifest(name):
				w.files = append(w.files, manifestFile{rel: rel, real: real})
			case filepath.Ext(name) == ".jsonnet" || filepath.Ext(name) == ".libsonnet":
				w.jsonnet = append(w.jsonnet, rel)
			}
		}
	}
	return nil
}

// vanished marks a missing directory as a sign of a checkout being removed.
func vanished(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("it vanished: %w", ErrCheckoutChanged)
	}
	return withoutPath(err)
}

func isManifest(name string) bool {
	return slices.Contains(manifestExts, filepath.Ext(name))
}

// withoutPath drops the absolute path from an *fs.PathError: messages name files
// relative to the checkout.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// objectID names an object for duplicate detection and messages.
func objectID(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	id := gvk.Kind
	if gvk.Group != "" {
		id += "." + gvk.Group
	}
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return id + " " + ns + "/" + name
	}
	return id + " " + name
}
