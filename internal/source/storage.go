package source

import (
	"os"
	"path/filepath"
	"strings"
)

// The bookkeeping of checkouts in storage: which are being written, their stored
// digests, and the small checks on names and errors that fetching uses.

func (f *Fetcher) setWriting(tmp string, writing bool) {
	f.writingMu.Lock()
	defer f.writingMu.Unlock()
	if writing {
		f.writing[filepath.Base(tmp)] = true
	} else {
		delete(f.writing, filepath.Base(tmp))
	}
}

func (f *Fetcher) isWriting(name string) bool {
	f.writingMu.Lock()
	defer f.writingMu.Unlock()
	return f.writing[name]
}

// storedDigest reads the digest recorded next to a checkout, recomputing
// (and recording) it if the record is missing or damaged.
func (f *Fetcher) storedDigest(name string) (string, error) {
	if d, err := f.readMetaDigest(name); err == nil {
		return d, nil
	}
	d, err := DirDigest(filepath.Join(f.dir, name))
	if err != nil {
		return "", err
	}
	if err := f.writeMeta(name, d, nil); err != nil {
		return "", err
	}
	return d, nil
}

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	return isLowerHex(hexPart)
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// isNotOurRef reports whether the server refused a wanted object: git says
// "not our ref <sha>" for a commit that is not reachable from its refs.
func isNotOurRef(err error) bool {
	return strings.Contains(err.Error(), "not our ref")
}
