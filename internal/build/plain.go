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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// manifestExts are the file name extensions read from a plain directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// manifestFile is a file found by the plain walk.
type manifestFile struct {
	rel  string // where it is in the checkout, slash-separated: what errors show
	real string // the absolute path to read, symlinks resolved
}

// buildPlain reads the manifests below dir (an absolute path inside root, symlinks
// resolved), ordered by their path in the checkout, then by document.
func buildPlain(root, dir string) ([]*unstructured.Unstructured, error) {
	var files []manifestFile
	if err := collectManifests(root, dir, relToRoot(root, dir), []string{dir}, &files); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b manifestFile) int { return cmp.Compare(a.rel, b.rel) })

	var objs []*unstructured.Unstructured
	seen := map[string]string{} // object id -> file that had it first
	for _, f := range files {
		data, err := os.ReadFile(f.real)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.rel, withoutPath(err))
		}
		fileObjs, err := decodeManifests(f.rel, data)
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
	return objs, nil
}

// collectManifests adds the manifest files below dir (real path realDir, shown as
// relDir) to files. Symlinks are followed only when they stay inside root; a symlink
// that the walk would use (a directory, or a manifest file) and that leaves root is
// an error. Hidden files and directories (".github", ".gitlab-ci.yml") are skipped:
// they hold CI and tool configuration, not objects. stack holds the real paths of the
// directories being walked, to stop at a symlink cycle.
func collectManifests(root, realDir, relDir string, stack []string, files *[]manifestFile) error {
	entries, err := os.ReadDir(realDir)
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", relDir, withoutPath(err))
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
				if isManifest(name) {
					return fmt.Errorf("reading %s: broken symlink", rel)
				}
				continue
			}
			fi, err := os.Stat(target)
			if err != nil {
				return fmt.Errorf("reading %s: %w", rel, withoutPath(err))
			}
			isDir = fi.IsDir()
			if !isDir && (!isManifest(name) || !fi.Mode().IsRegular()) {
				continue
			}
			if !within(root, target) {
				return &OutsideError{Path: rel}
			}
			real = target
		}
		switch {
		case isDir:
			if slices.Contains(stack, real) {
				return fmt.Errorf("reading %s: symlink cycle", rel)
			}
			if err := collectManifests(root, real, rel, append(stack, real), files); err != nil {
				return err
			}
		case e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0:
			if isManifest(name) {
				*files = append(*files, manifestFile{rel: rel, real: real})
			}
		}
	}
	return nil
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
