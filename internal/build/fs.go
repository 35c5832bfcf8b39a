package build

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	fluxfs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ErrOutsideCheckout is matched (errors.Is) by an *OutsideError.
var ErrOutsideCheckout = errors.New("outside the checkout")

// errReadOnly is returned by every write to the build's file system: checkouts are
// shared between Applications and must never change.
var errReadOnly = errors.New("the checkout is read-only during a build")

// OutsideError reports a path that is, or resolves (through "..", an absolute path or
// a symlink) to, a place outside the checkout.
type OutsideError struct {
	// Path is the offending path relative to the checkout root, slash-separated. For a
	// symlink it is where the link is, not where it points: the target is not shown.
	Path string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("%q is outside the checkout", e.Path)
}

// Is makes errors.Is(err, ErrOutsideCheckout) true.
func (e *OutsideError) Is(target error) bool { return target == ErrOutsideCheckout }

// confinedFS is the file system kustomize sees: fluxcd/pkg/kustomize's secure
// on-disk file system (every path, after following symlinks, must lie below root),
// with three changes made by this wrapper:
//   - its constraint errors, which print absolute paths, become *OutsideError naming
//     the path relative to the checkout;
//   - relative paths are taken relative to root, not to the process's working
//     directory, so a build does not depend on where the process runs;
//   - writes are refused;
//   - ReadFile, which kustomize reads every kustomization, resource, patch and
//     generator input with, checks the file's size (MaxFileSize, MaxRenderSize)
//     before reading it and the expansion of its YAML aliases before kustomize parses
//     it (kustomize expands aliases when it loads a resource);
//   - the build's Filter, if any, sees what ReadFile returns (after those checks).
//
// The secure file system is built with MakeFsOnDiskSecure and no allowed prefixes:
// MakeFsOnDiskSecureBuild would also admit kustomize's temporary clone directories,
// which only matter for remote bases, and those are refused before kustomize runs.
type confinedFS struct {
	filesys.FileSystem
	root   string
	budget *budget
	// filter, when set, sees every file kustomize reads after the checks (see Filter).
	filter Filter
}

var _ filesys.FileSystem = confinedFS{}

// newConfinedFS returns a read-only file system confined to root, which must be an
// absolute path with symlinks already resolved.
func newConfinedFS(root string) (confinedFS, error) {
	secure, err := fluxfs.MakeFsOnDiskSecure(root)
	if err != nil {
		return confinedFS{}, fmt.Errorf("confining the file system to the checkout: %w", err)
	}
	return confinedFS{FileSystem: secure, root: root, budget: newBudget(maxKustomizeValues)}, nil
}

func (c confinedFS) abs(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(c.root, path)
}

// translate turns the secure file system's constraint error into an *OutsideError.
func (c confinedFS) translate(path string, err error) error {
	var ce *fluxfs.ConstraintError
	if errors.As(err, &ce) {
		return &OutsideError{Path: relToRoot(c.root, c.abs(path))}
	}
	return err
}

// Open opens path for reading if it is inside the checkout.
func (c confinedFS) Open(path string) (filesys.File, error) {
	f, err := c.FileSystem.Open(c.abs(path))
	return f, c.translate(path, err)
}

// ReadFile reads path if it is inside the checkout, within the build's size limits,
// and if no YAML document in it expands beyond the limit through aliases.
func (c confinedFS) ReadFile(path string) ([]byte, error) {
	abs := c.abs(path)
	f, err := c.FileSystem.Open(abs)
	if err != nil {
		return nil, c.translate(path, err)
	}
	defer f.Close()
	rel := relToRoot(c.root, abs)
	data, err := c.budget.read(f, rel)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			c.budget.refuse(err)
		}
		return nil, err // kustomize reads a directory first, to find that it is one
	}
	if err := c.budget.checkYAML(rel, data); err != nil {
		c.budget.refuse(err)
		return nil, err
	}
	if c.filter != nil {
		if data, err = c.filter(rel, data); err != nil {
			// Kept, so that the build fails with it whatever kustomize makes of it.
			c.budget.refuse(err)
			return nil, err
		}
	}
	return data, nil
}

// ReadDir lists path if it is inside the checkout.
func (c confinedFS) ReadDir(path string) ([]string, error) {
	names, err := c.FileSystem.ReadDir(c.abs(path))
	return names, c.translate(path, err)
}

// CleanedAbs resolves path (symlinks too) and refuses a result outside the checkout.
func (c confinedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	d, f, err := c.FileSystem.CleanedAbs(c.abs(path))
	return d, f, c.translate(path, err)
}

// Walk walks path; it stops with an error at the first entry outside the checkout.
func (c confinedFS) Walk(path string, walkFn filepath.WalkFunc) error {
	return c.translate(path, c.FileSystem.Walk(c.abs(path), walkFn))
}

// IsDir reports whether path is a directory inside the checkout.
func (c confinedFS) IsDir(path string) bool { return c.FileSystem.IsDir(c.abs(path)) }

// Exists reports whether path exists inside the checkout.
func (c confinedFS) Exists(path string) bool { return c.FileSystem.Exists(c.abs(path)) }

// Glob returns the matches of pattern that are inside the checkout.
func (c confinedFS) Glob(pattern string) ([]string, error) {
	return c.FileSystem.Glob(c.abs(pattern))
}

// Create is refused: the checkout is read-only.
func (c confinedFS) Create(path string) (filesys.File, error) {
	return nil, &os.PathError{Op: "create", Path: relToRoot(c.root, c.abs(path)), Err: errReadOnly}
}

// Mkdir is refused: the checkout is read-only.
func (c confinedFS) Mkdir(path string) error {
	return &os.PathError{Op: "mkdir", Path: relToRoot(c.root, c.abs(path)), Err: errReadOnly}
}

// MkdirAll is refused: the checkout is read-only.
func (c confinedFS) MkdirAll(path string) error {
	return &os.PathError{Op: "mkdir", Path: relToRoot(c.root, c.abs(path)), Err: errReadOnly}
}

// RemoveAll is refused: the checkout is read-only.
func (c confinedFS) RemoveAll(path string) error {
	return &os.PathError{Op: "remove", Path: relToRoot(c.root, c.abs(path)), Err: errReadOnly}
}

// WriteFile is refused: the checkout is read-only.
func (c confinedFS) WriteFile(path string, _ []byte) error {
	return &os.PathError{Op: "write", Path: relToRoot(c.root, c.abs(path)), Err: errReadOnly}
}

// within reports whether the absolute, cleaned path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel)
}

// relToRoot names the absolute path p relative to root, slash-separated ("." for
// root itself; it starts with ".." when p is outside).
func relToRoot(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}
