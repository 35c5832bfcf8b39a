package source

import (
	"bytes"
	"io"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// memoryPackSize is the largest pack a fetch keeps in memory; a larger one is written
// to disk as it arrives.
const memoryPackSize = 1 << 20

// objectStore holds the objects of one fetch, in go-git's filesystem storage either
// way: it keeps the pack as it arrived (compressed) and streams large blobs from it.
// Only the filesystem under it differs: memory for a pack of at most memoryPackSize
// bytes (a push to a repository of manifests: a few KiB, which a filesystem on disk
// costs a temporary directory, a pack file, an index written 4 bytes at a time, and
// their removal), a temporary directory for a larger one.
type objectStore struct {
	f   *Fetcher
	st  *filesystem.Storage
	dir string // the temporary directory; "" while in memory
}

// pick is a remote.fetchInto choice: the first fetch's pack goes to memory when it
// ends within memoryPackSize bytes, to disk otherwise; after that, where the first went.
func (o *objectStore) pick(pack io.Reader) (storer.Storer, io.Reader, error) {
	if o.st != nil {
		return o.st, pack, nil
	}
	head, err := io.ReadAll(io.LimitReader(pack, memoryPackSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(head) <= memoryPackSize {
		o.st = newObjectStorage(memfs.New())
		return o.st, bytes.NewReader(head), nil
	}
	st, err := o.onDisk()
	return st, io.MultiReader(bytes.NewReader(head), pack), err
}

// onDisk makes the storage on disk; o holds none yet (a fresh objectStore, or pick's
// first pack).
func (o *objectStore) onDisk() (*filesystem.Storage, error) {
	dir, err := os.MkdirTemp(o.f.dir, tmpPrefix+"objects-*")
	if err != nil {
		return nil, err
	}
	o.f.setWriting(dir, true)
	o.dir, o.st = dir, newObjectStorage(osfs.New(dir))
	return o.st, nil
}

// close lets the objects go (and removes them from disk).
func (o *objectStore) close() {
	if o.st != nil {
		_ = o.st.Close()
	}
	if o.dir != "" {
		_ = os.RemoveAll(o.dir)
		o.f.setWriting(o.dir, false)
	}
}

func newObjectStorage(fs billy.Filesystem) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{ExclusiveAccess: true, LargeObjectThreshold: largeObjectThreshold})
}
