package oci

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what Extract writes.
type Limits struct {
	// MaxBytes bounds the bytes of the files written; MaxFiles the entries.
	MaxBytes int64
	MaxFiles int
}

// Extract unpacks a tar+gzip stream into dir (which exists and is empty). It refuses
// absolute paths, paths out of dir, device files, FIFOs and hard links, and symbolic
// links that do not resolve inside dir; it stops at lim. Symbolic links are created after
// every file, so no file is ever written through one. A failure leaves dir partly
// written: the caller removes it.
func Extract(r io.Reader, dir string, lim Limits) error {
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultMaxFiles
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxSize
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: not a gzip stream: %v", ErrLayerInvalid, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	type link struct{ rel, target string }
	var links []link
	var files int
	var written int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: reading the tar stream: %v", ErrLayerInvalid, err)
		}
		if files++; files > lim.MaxFiles {
			return fmt.Errorf("the layer has more than %d entries: %w", lim.MaxFiles, ErrTooLarge)
		}
		rel, err := entryPath(h.Name)
		if err != nil {
			return err
		}
		if rel == "." {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if written += h.Size; written > lim.MaxBytes {
				return fmt.Errorf("unpacking %q takes the content over %d bytes: %w", rel, lim.MaxBytes, ErrTooLarge)
			}
			if err := writeFile(target, tr, h); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := linkInside(rel, h.Linkname); err != nil {
				return err
			}
			links = append(links, link{rel, h.Linkname})
		case tar.TypeXGlobalHeader:
			continue
		default: // hard links, devices, FIFOs, …
			return fmt.Errorf("%w: %q is a %s, which an artifact may not hold", ErrLayerInvalid, rel, typeName(h.Typeflag))
		}
	}
	for _, l := range links {
		target := filepath.Join(dir, filepath.FromSlash(l.rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(l.target, target); err != nil {
			return fmt.Errorf("%w: symbolic link %q: %v", ErrLayerInvalid, l.rel, err)
		}
	}
	// A chain of links can leave dir where each link alone does not (a/s -> .., then
	// y -> a/s/../x): every link is resolved for real.
	for _, l := range links {
		if err := resolvesInside(dir, l.rel); err != nil {
			return err
		}
	}
	return nil
}

// entryPath cleans a tar entry's name; absolute names, names that climb out and names
// deeper than maxDepth are refused.
func entryPath(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: entry %q is not a relative path", ErrLayerInvalid, name)
	}
	rel := path.Clean(name)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: entry %q is outside the artifact", ErrLayerInvalid, name)
	}
	if strings.Count(rel, "/") >= maxDepth {
		return "", fmt.Errorf("%w: entry %q is deeper than %d directories", ErrLayerInvalid, name, maxDepth)
	}
	return rel, nil
}

// linkInside refuses a symbolic link whose target is absolute or climbs out of the
// artifact from where the link is.
func linkInside(rel, target string) error {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) || strings.Contains(target, "\\") {
		return fmt.Errorf("%w: symbolic link %q points to %q, outside the artifact", ErrLayerInvalid, rel, target)
	}
	joined := path.Join(path.Dir(rel), target)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return fmt.Errorf("%w: symbolic link %q points to %q, outside the artifact", ErrLayerInvalid, rel, target)
	}
	return nil
}

// resolvesInside checks that the link rel, resolved on disk, names something inside dir.
func resolvesInside(dir, rel string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("%w: symbolic link %q does not resolve inside the artifact", ErrLayerInvalid, rel)
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: symbolic link %q resolves outside the artifact", ErrLayerInvalid, rel)
	}
	return nil
}

// writeFile writes a regular file's h.Size bytes (mode 0644, or 0755 when executable).
func writeFile(target string, r io.Reader, h *tar.Header) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	_, err = io.CopyN(f, r, h.Size)
	return errors.Join(err, f.Close())
}

func typeName(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device file"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}
