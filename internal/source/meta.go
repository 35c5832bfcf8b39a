package source

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Each checkout <name> has a metadata file <name>.digest beside it (the
// checkout itself holds only repository content):
//
//	sha256:<64 hex>\n                       the artifact digest
//	<kind> <blob id> <sha256> <path>\x00    one record per file, any number
//
// Reusing a checkout reads the first line only. The records let the next
// checkout of the same repository hard-link the files it already has rather
// than write and hash them again.

// writeMeta records digest and files for the checkout name, atomically.
func (f *Fetcher) writeMeta(name, digest string, files []digestRecord) error {
	var b bytes.Buffer
	b.Grow(len(digest) + 1 + len(files)*160)
	b.WriteString(digest)
	b.WriteByte('\n')
	for _, r := range files {
		if r.blob.IsZero() {
			continue
		}
		fmt.Fprintf(&b, "%s %s %s %s\x00", r.kind, r.blob, hex.EncodeToString(r.sum[:]), r.path)
	}

	tmp, err := os.CreateTemp(f.dir, tmpPrefix+"meta-*")
	if err != nil {
		return fmt.Errorf("recording digest: %w", err)
	}
	_, werr := tmp.Write(b.Bytes())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("recording digest: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.metaPath(name)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("recording digest: %w", err)
	}
	return nil
}

func (f *Fetcher) metaPath(name string) string {
	return filepath.Join(f.dir, name+digestSuffix)
}

// readMetaDigest returns the digest recorded for the checkout name.
func (f *Fetcher) readMetaDigest(name string) (string, error) {
	file, err := os.Open(f.metaPath(name))
	if err != nil {
		return "", err
	}
	defer file.Close()
	line, err := bufio.NewReaderSize(file, 128).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if d := strings.TrimSpace(line); validDigest(d) {
		return d, nil
	}
	return "", fmt.Errorf("%s holds no digest", f.metaPath(name))
}

// blobKey identifies file content together with its exec bit: files that
// share a key can share an inode.
type blobKey struct {
	blob plumbing.Hash
	kind string
}

// priorFile is a file of an earlier checkout that a new one may link to.
type priorFile struct {
	path string // absolute
	sum  [sha256.Size]byte
}

// priorFiles reads the file records of the checkout in dir (one of this
// Fetcher's), keyed by content. It returns nil if there are none or they are
// damaged: the caller then writes every file.
func (f *Fetcher) priorFiles(dir string) map[blobKey]priorFile {
	if filepath.Dir(dir) != f.dir || !isDir(dir) {
		return nil
	}
	b, err := os.ReadFile(f.metaPath(filepath.Base(dir)))
	if err != nil {
		return nil
	}
	_, records, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil
	}
	files := map[blobKey]priorFile{}
	for len(records) > 0 {
		var rec []byte
		rec, records, ok = bytes.Cut(records, []byte{0})
		if !ok {
			return nil
		}
		fields := strings.SplitN(string(rec), " ", 4)
		if len(fields) != 4 || (fields[0] != kindRegular && fields[0] != kindExecutable) {
			continue
		}
		sum, err := hex.DecodeString(fields[2])
		if !isFullHash(fields[1]) || err != nil || len(sum) != sha256.Size || !filepath.IsLocal(fields[3]) {
			return nil
		}
		pf := priorFile{path: filepath.Join(dir, filepath.FromSlash(fields[3]))}
		copy(pf.sum[:], sum)
		files[blobKey{blob: plumbing.NewHash(fields[1]), kind: fields[0]}] = pf
	}
	return files
}

// CommitOf returns the 40-hex commit of a revision ("<ref>@sha1:<commit>",
// "sha1:<commit>", or a bare commit), lower-cased, or "" when it names none.
func CommitOf(revision string) string {
	c := revision
	if i := strings.LastIndex(revision, "sha1:"); i >= 0 {
		c = revision[i+len("sha1:"):]
	}
	if len(c) != 40 || strings.Trim(strings.ToLower(c), "0123456789abcdef") != "" {
		return ""
	}
	return strings.ToLower(c)
}
