package source

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxTagDepth bounds the chain of tags pointing at tags.
const maxTagDepth = 8

// errNotCommit is returned when a tag points at something other than a commit.
var errNotCommit = errors.New("not a commit")

// peelToCommit follows annotated tags from h to the commit they point at.
func peelToCommit(st storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	for range maxTagDepth {
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("reading object %s: %w", h, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			return object.DecodeCommit(st, obj)
		case plumbing.TagObject:
			tag, err := object.DecodeTag(st, obj)
			if err != nil {
				return nil, fmt.Errorf("reading tag %s: %w", h, err)
			}
			h = tag.Target
		default:
			return nil, fmt.Errorf("object %s is a %s: %w", h, obj.Type(), errNotCommit)
		}
	}
	return nil, fmt.Errorf("object %s: more than %d nested tags: %w", h, maxTagDepth, errNotCommit)
}

// treeWriter writes a commit's tree into a directory and digests what it
// writes in the same pass.
type treeWriter struct {
	st     storer.EncodedObjectStorer
	dir    string
	root   *os.Root // all writes go through it, so no path can leave dir
	ignore *ignoreMatcher
	prior  map[blobKey]priorFile // files of an earlier checkout to link to
	dirs   map[string]bool       // directories already created
	sum    digester
	limits *checkoutLimits
}

// writeTree writes the files of commit into dir, which must exist and be
// empty, leaving out ignored paths, and returns the records of what it
// wrote. There is no .git directory: the result is plain content.
// Submodules are not fetched and leave no trace.
//
// A regular file whose content and exec bit match a file in prior is
// hard-linked to it instead of written: checkouts are read-only, and a new
// commit usually changes few files.
//
// Every tree entry walked and every byte written is charged to limits (a hard link
// writes none); going over fails with ErrTooLarge before the entry is written.
func writeTree(st storer.EncodedObjectStorer, commit *object.Commit, dir string, ignore *ignoreMatcher,
	prior map[blobKey]priorFile, limits *checkoutLimits) (*digester, error) {
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading tree of commit %s: %w", commit.Hash, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	w := &treeWriter{st: st, dir: dir, root: root, ignore: ignore, prior: prior, dirs: map[string]bool{"": true}, limits: limits}
	if err := w.walk(tree, nil); err != nil {
		return nil, err
	}
	return &w.sum, nil
}

func (w *treeWriter) walk(tree *object.Tree, parent []string) error {
	for _, e := range tree.Entries {
		if err := w.limits.entry(); err != nil {
			return err
		}
		if err := checkEntryName(e.Name); err != nil {
			return fmt.Errorf("tree entry %q in %q: %w", e.Name, strings.Join(parent, "/"), err)
		}
		if strings.EqualFold(e.Name, ".git") {
			// git refuses to check such a tree out; leave it out here.
			continue
		}
		elems := append(parent[:len(parent):len(parent)], e.Name)
		rel := strings.Join(elems, "/")
		switch e.Mode {
		case filemode.Dir:
			if w.ignore.ignored(elems, true) {
				continue
			}
			sub, err := object.GetTree(w.st, e.Hash)
			if err != nil {
				return fmt.Errorf("reading tree %q: %w", rel, err)
			}
			if err := w.walk(sub, elems); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			if w.ignore.ignored(elems, false) {
				continue
			}
			if err := w.writeFile(rel, e.Hash, e.Mode == filemode.Executable); err != nil {
				return err
			}
		case filemode.Symlink:
			if w.ignore.ignored(elems, false) {
				continue
			}
			if err := w.writeSymlink(rel, e.Hash); err != nil {
				return err
			}
		case filemode.Submodule:
			continue
		default:
			return fmt.Errorf("tree entry %q has unsupported mode %s", rel, e.Mode)
		}
	}
	return nil
}

// checkEntryName refuses names that a well-formed tree cannot hold and that
// would be dangerous as path elements.
func checkEntryName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return errors.New("invalid name")
	case strings.ContainsAny(name, "/\x00"):
		return errors.New("name contains a slash or NUL")
	}
	return nil
}

func (w *treeWriter) mkdirParent(rel string) error {
	dir := path.Dir(rel)
	if dir == "." || w.dirs[dir] {
		return nil
	}
	if err := w.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating directory %q: %w", dir, err)
	}
	for d := dir; d != "." && !w.dirs[d]; d = path.Dir(d) {
		w.dirs[d] = true
	}
	return nil
}

func (w *treeWriter) writeFile(rel string, h plumbing.Hash, exec bool) (err error) {
	if err := w.mkdirParent(rel); err != nil {
		return err
	}
	perm, kind := os.FileMode(0o644), kindRegular
	if exec {
		perm, kind = 0o755, kindExecutable
	}
	if pf, ok := w.prior[blobKey{blob: h, kind: kind}]; ok {
		// The new path's parents were made through root and are real
		// directories; the old path is one this Fetcher wrote. If the old
		// checkout is gone (GC), fall back to writing.
		if os.Link(pf.path, filepath.Join(w.dir, filepath.FromSlash(rel))) == nil {
			w.sum.add(digestRecord{path: rel, kind: kind, sum: pf.sum, blob: h})
			return nil
		}
	}
	blob, err := object.GetBlob(w.st, h)
	if err != nil {
		return fmt.Errorf("reading blob of %q: %w", rel, err)
	}
	if err := w.limits.write(rel, blob.Size); err != nil {
		return err
	}
	r, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("reading blob of %q: %w", rel, err)
	}
	defer r.Close()

	f, err := w.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %q: %w", rel, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("writing %q: %w", rel, cerr)
		}
	}()
	hash := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, hash), r); err != nil {
		return fmt.Errorf("writing %q: %w", rel, err)
	}
	rec := digestRecord{path: rel, kind: kind, blob: h}
	copy(rec.sum[:], hash.Sum(nil))
	w.sum.add(rec)
	return nil
}

// writeSymlink creates the link as git does, whatever its target: keeping
// links inside the checkout is the job of whoever reads it (kustomize runs
// on a filesystem confined to the checkout).
func (w *treeWriter) writeSymlink(rel string, h plumbing.Hash) error {
	if err := w.mkdirParent(rel); err != nil {
		return err
	}
	blob, err := object.GetBlob(w.st, h)
	if err != nil {
		return fmt.Errorf("reading blob of %q: %w", rel, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("reading blob of %q: %w", rel, err)
	}
	defer r.Close()
	target, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return fmt.Errorf("reading blob of %q: %w", rel, err)
	}
	if len(target) == 0 || strings.ContainsRune(string(target), 0) {
		return fmt.Errorf("symlink %q has an invalid target", rel)
	}
	if err := w.limits.write(rel, int64(len(target))); err != nil {
		return err
	}
	if err := w.root.Symlink(string(target), rel); err != nil {
		return fmt.Errorf("creating symlink %q: %w", rel, err)
	}
	w.sum.add(digestRecord{path: rel, kind: kindSymlink, sum: sha256.Sum256(target), blob: h})
	return nil
}
