package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// File kinds as they enter the digest (git's mode notation).
const (
	kindRegular    = "100644"
	kindExecutable = "100755"
	kindSymlink    = "120000"
)

// digester collects one record per file and folds them into the artifact
// digest. The digest is
//
//	sha256( for each file, sorted by slash-separated relative path:
//	        kind " " hex(sha256(content)) " " path NUL )
//
// where kind is 100644, 100755 or 120000 and a symlink's content is its
// target. Directories do not count (git does not track empty ones), and
// neither do timestamps, owners or permission bits other than exec. The
// record is unambiguous: kind and hash have fixed lengths and a path cannot
// hold NUL.
type digester struct {
	files []digestRecord
}

// digestRecord describes one checked-out file.
type digestRecord struct {
	path string            // slash-separated, relative to the checkout
	kind string            // kindRegular, kindExecutable or kindSymlink
	sum  [sha256.Size]byte // of the content (a symlink's target)
	blob plumbing.Hash     // git blob id; zero when read from disk
}

func (d *digester) add(r digestRecord) {
	d.files = append(d.files, r)
}

// digest returns "sha256:<64 hex>".
func (d *digester) digest() string {
	slices.SortFunc(d.files, func(a, b digestRecord) int { return strings.Compare(a.path, b.path) })
	h := sha256.New()
	var hexSum [2 * sha256.Size]byte
	for _, f := range d.files {
		hex.Encode(hexSum[:], f.sum[:])
		io.WriteString(h, f.kind)
		io.WriteString(h, " ")
		h.Write(hexSum[:])
		io.WriteString(h, " ")
		io.WriteString(h, f.path)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// DirDigest computes the digest that Fetch reports for a checkout by reading
// dir from disk. A file counts as executable when its owner exec bit is set.
// Fetch computes the same value while writing the files, so this is needed
// only to verify a directory or to recover a lost digest file.
func DirDigest(dir string) (string, error) {
	var d digester
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch t := e.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			d.add(digestRecord{path: rel, kind: kindSymlink, sum: sha256.Sum256([]byte(filepath.ToSlash(target)))})
		case t.IsRegular():
			info, err := e.Info()
			if err != nil {
				return err
			}
			kind := kindRegular
			if info.Mode().Perm()&0o100 != 0 {
				kind = kindExecutable
			}
			sum, err := hashFile(p)
			if err != nil {
				return err
			}
			d.add(digestRecord{path: rel, kind: kind, sum: sum})
		default:
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", rel)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("computing digest of %s: %w", dir, err)
	}
	return d.digest(), nil
}

func hashFile(name string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(name)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
