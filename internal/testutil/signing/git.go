package signing

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// Raw is an encoded Git object: its id and its content without the header.
type Raw struct {
	ID      string
	Content []byte
}

// Commit encodes a commit of tree with parents, signed by key (unsigned when key is nil),
// and stores it in st when st is not nil.
func Commit(t testing.TB, st storage.Storer, key *Key, tree plumbing.Hash, msg string, parents ...plumbing.Hash) Raw {
	t.Helper()
	who := object.Signature{Name: "Test", Email: "test@example.com", When: time.Unix(1700000000, 0).UTC()}
	c := &object.Commit{Author: who, Committer: who, Message: msg, TreeHash: tree, ParentHashes: parents}
	if key != nil {
		payload := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(payload); err != nil {
			t.Fatal(err)
		}
		sig, err := key.Sign(readObject(t, payload))
		if err != nil {
			t.Fatalf("signing: signing commit: %v", err)
		}
		c.PGPSignature = sig
	}
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	return store(t, st, obj)
}

// Tag encodes an annotated tag name of commit target, signed by key (unsigned when key is
// nil), and stores it in st when st is not nil.
func Tag(t testing.TB, st storage.Storer, key *Key, name string, target plumbing.Hash) Raw {
	t.Helper()
	who := object.Signature{Name: "Test", Email: "test@example.com", When: time.Unix(1700000000, 0).UTC()}
	tag := &object.Tag{Name: name, Tagger: who, Message: name + "\n", TargetType: plumbing.CommitObject, Target: target}
	if key != nil {
		payload := &plumbing.MemoryObject{}
		if err := tag.EncodeWithoutSignature(payload); err != nil {
			t.Fatal(err)
		}
		sig, err := key.Sign(readObject(t, payload))
		if err != nil {
			t.Fatalf("signing: signing tag: %v", err)
		}
		tag.PGPSignature = sig
	}
	obj := &plumbing.MemoryObject{}
	if err := tag.Encode(obj); err != nil {
		t.Fatal(err)
	}
	return store(t, st, obj)
}

// CommitOnBranch adds a commit (signed by key, or unsigned when nil) with the tree of
// the branch's tip to the repository at path (a bare one a gittest.Repo serves), moves
// the branch to it and returns its id. The message makes it a new commit.
func CommitOnBranch(t testing.TB, path, branch string, key *Key, msg string) string {
	t.Helper()
	repo, err := git.PlainOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	raw := Commit(t, repo.Storer, key, parent.TreeHash, msg, parent.Hash)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref.Name(), plumbing.NewHash(raw.ID))); err != nil {
		t.Fatal(err)
	}
	return raw.ID
}

// TagAt creates the annotated tag name (signed by key, or unsigned when nil) at commit in
// the repository at path and returns the tag object's id.
func TagAt(t testing.TB, path, name, commit string, key *Key) string {
	t.Helper()
	repo, err := git.PlainOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := Tag(t, repo.Storer, key, name, plumbing.NewHash(commit))
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewTagReferenceName(name), plumbing.NewHash(raw.ID))); err != nil {
		t.Fatal(err)
	}
	return raw.ID
}

func store(t testing.TB, st storage.Storer, obj *plumbing.MemoryObject) Raw {
	t.Helper()
	raw := Raw{ID: obj.Hash().String(), Content: readObject(t, obj)}
	if st != nil {
		if _, err := st.SetEncodedObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

func readObject(t testing.TB, obj *plumbing.MemoryObject) []byte {
	t.Helper()
	r, err := obj.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return readAll(r)
}
