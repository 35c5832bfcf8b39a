package helm

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// readConfined reads the file rel (relative to dir) of a checkout without leaving dir and
// without following any symlink: every component from dir down is Lstat-ed through an
// os.Root (which cannot resolve outside dir), a symlink anywhere on the way is refused,
// the file is opened without blocking (a FIFO cannot stall the read) and must be a
// regular file once open (a device, FIFO or socket is refused, also one swapped in after
// the Lstat), and more than max bytes are never read. Errors name rel, never the
// content or where a symlink points.
func readConfined(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", rel, err)
	}
	defer root.Close()
	rel = filepath.Clean(rel)
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s is outside the checkout", rel)
	}
	cur := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := root.Lstat(cur)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rel, unwrapPath(err))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symlink: charts are read from the checkout only, without symlinks", cur)
		}
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d a chart file may have", rel, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, unwrapPath(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s has more than the %d bytes a chart file may have", rel, max)
	}
	return data, nil
}

// unwrapPath drops the absolute path a *fs.PathError carries (the operator's storage
// layout is nobody's business), keeping the cause.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
