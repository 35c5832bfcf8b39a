package imageupdate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Bounds on what one run reads of a tenant's repository.
const (
	// MaxFiles is the most YAML files read under update.path.
	MaxFiles = 10_000
	// MaxFileSize is the largest YAML file read; a larger one is skipped.
	MaxFileSize = 2 << 20
	// MaxTotalBytes is the most bytes read in all.
	MaxTotalBytes = 256 << 20
)

// ErrTooLarge: update.path holds more files or bytes than a run reads.
var ErrTooLarge = errors.New("too large")

// updateTree rewrites the YAML files under dir (slash-separated, relative to root) in
// place. It works through an os.Root: no path, symlink included, leads out of the
// checkout; symlinks are not followed at all, and .git is skipped.
func updateTree(root *os.Root, dir string, values Values) ([]Change, error) {
	dir = path.Clean(strings.TrimPrefix(dir, "./"))
	if dir == ".." || strings.HasPrefix(dir, "../") || path.IsAbs(dir) {
		return nil, fmt.Errorf("update.path %q leaves the repository", dir)
	}
	if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("update.path %q is not a directory of the repository", dir)
	}
	var files []string
	var total int64
	err := fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxFileSize {
			return nil
		}
		if len(files) == MaxFiles {
			return fmt.Errorf("%s holds more than %d YAML files: %w", dir, MaxFiles, ErrTooLarge)
		}
		if total += info.Size(); total > MaxTotalBytes {
			return fmt.Errorf("%s holds more than %d bytes of YAML: %w", dir, MaxTotalBytes, ErrTooLarge)
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var changes []Change
	for _, f := range files {
		content, err := readBounded(root, f)
		if err != nil {
			return nil, err
		}
		out, cs, err := Rewrite(f, content, values)
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			continue
		}
		if err := root.WriteFile(f, out, 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
		changes = append(changes, cs...)
	}
	return changes, nil
}

// readBounded reads a file of at most MaxFileSize bytes (it may have grown since the walk).
func readBounded(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", name, MaxFileSize, ErrTooLarge)
	}
	return b, nil
}
