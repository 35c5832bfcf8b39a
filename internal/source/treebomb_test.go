package source

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// commitTreeBomb writes, with go-git's object API, a commit on main of the bare
// repository at path whose tree names one blob of blobSize bytes fanOut² times (fanOut
// directories that are all the same tree of fanOut files), beside good.yaml, and returns
// its sha. The objects are a few KiB whatever the fan-out.
func commitTreeBomb(t *testing.T, path string, fanOut, blobSize int) string {
	t.Helper()
	r, err := git.PlainOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Storer
	blob := storeObject(t, st, plumbing.BlobObject, bytes.Repeat([]byte("x"), blobSize))
	good := storeObject(t, st, plumbing.BlobObject, []byte("a: 1\n"))
	fan := func(prefix string, mode filemode.FileMode, h plumbing.Hash) plumbing.Hash {
		tree := &object.Tree{}
		for i := range fanOut {
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: fmt.Sprintf("%s%07d", prefix, i), Mode: mode, Hash: h})
		}
		return storeEncoded(t, st, tree)
	}
	files := fan("f", filemode.Regular, blob)
	dirs := fan("d", filemode.Dir, files)
	root := storeEncoded(t, st, &object.Tree{Entries: []object.TreeEntry{
		{Name: "bomb", Mode: filemode.Dir, Hash: dirs},
		{Name: "good.yaml", Mode: filemode.Regular, Hash: good},
	}})
	sig := object.Signature{Name: "attacker", Email: "a@example.com", When: time.Now()}
	head, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	commit := storeEncoded(t, st, &object.Commit{Author: sig, Committer: sig, Message: "a tree bomb",
		TreeHash: root, ParentHashes: []plumbing.Hash{head.Hash()}})
	if err := st.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), commit)); err != nil {
		t.Fatal(err)
	}
	return commit.String()
}

func storeObject(t *testing.T, st storer.EncodedObjectStorer, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	t.Helper()
	obj := st.NewEncodedObject()
	obj.SetType(typ)
	w, err := obj.Writer()
	if err == nil {
		_, err = w.Write(content)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func storeEncoded(t *testing.T, st storer.EncodedObjectStorer, o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	t.Helper()
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Issue 34, item 2: a commit whose trees repeat one blob (a few KiB of objects naming a
// million files) fails with ErrTooLarge once the checkout walks more entries than
// MaxFiles, or would write more than MaxSize bytes; nothing of it stays on disk and the
// last good checkout is kept.
func TestTreeBombStopsAtTheCheckoutLimits(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		fanOut   int
		blobSize int
		req      Request
		message  string
	}{
		{name: "files", fanOut: 1000, blobSize: 16, req: Request{MaxFiles: 5000, MaxSize: 1 << 30},
			message: "more than 5000 files and directories"},
		{name: "bytes", fanOut: 1000, blobSize: 64 << 10, req: Request{MaxSize: 1 << 20},
			message: "over the size limit of 1048576 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := gittest.NewServer(t, gittest.Options{})
			repo := srv.CreateRepo("app")
			goodSHA := repo.Commit("main", "good", map[string]string{"good.yaml": "a: 1\n"})
			f := newTestFetcher(t)
			req := tt.req
			req.URL, req.Ref, req.Key = srv.HTTPURL("app"), Ref{Branch: "main"}, RepositoryKey(srv.HTTPURL("app"), "")
			good, err := f.Fetch(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(good.Commit).To(Equal(goodSHA))
			before, err := readDirNames(f.dir)
			g.Expect(err).NotTo(HaveOccurred())

			bombSHA := commitTreeBomb(t, repo.Path(), tt.fanOut, tt.blobSize)
			req.Current = good
			a, err := f.Fetch(ctx, req)
			g.Expect(a).To(BeNil())
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
			g.Expect(err.Error()).To(ContainSubstring(bombSHA))
			after, err := readDirNames(f.dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(after).To(Equal(before), "the partial checkout is removed, the good one kept")
			g.Expect(readTree(t, filepath.Join(f.dir, DirName(req.Key, goodSHA, nil)))).To(Equal(map[string]string{"good.yaml": "a: 1\n"}))
		})
	}
}

// A Request without MaxFiles gets DefaultMaxFiles; without MaxSize no byte limit.
func TestCheckoutLimitsDefaults(t *testing.T) {
	g := NewWithT(t)
	l := newCheckoutLimits(0, 0)
	for range DefaultMaxFiles {
		g.Expect(l.entry()).To(Succeed())
	}
	g.Expect(l.entry()).To(MatchError(ErrTooLarge))
	g.Expect(l.write("big", 1<<40)).To(Succeed())
	l = newCheckoutLimits(10, 100)
	g.Expect(l.write("a", 100)).To(Succeed())
	g.Expect(l.write("b", 1)).To(MatchError(ErrTooLarge))
}
