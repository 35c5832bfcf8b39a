package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// signedSuffix names the record of a checkout's signed objects, beside its digest.
const signedSuffix = ".signed"

// maxSignedObject bounds a commit or tag object kept for verification (internal/verify
// refuses larger ones anyway): a commit message cannot make the record grow unbounded.
const maxSignedObject = 1 << 20

// Signed holds the raw Git objects (content without the "<type> <size>\0" header) that
// carry the signatures of a checkout, for internal/verify.
type Signed struct {
	// Want is the object the ref pointed at when these were recorded.
	Want string `json:"want"`
	// CommitID and Commit: the commit checked out.
	CommitID string `json:"commitID"`
	Commit   []byte `json:"commit"`
	// TagID and Tag: the annotated tag the ref selected; empty otherwise.
	TagID string `json:"tagID,omitempty"`
	Tag   []byte `json:"tag,omitempty"`
}

// signedObjects reads the commit and, when want (what the ref pointed at) is an
// annotated tag, the tag from the fetched objects.
func signedObjects(st storer.EncodedObjectStorer, want, commit plumbing.Hash) (*Signed, error) {
	s := &Signed{Want: want.String(), CommitID: commit.String()}
	var err error
	if s.Commit, err = rawObject(st, plumbing.CommitObject, commit); err != nil {
		return nil, err
	}
	if want != commit {
		if obj, err := st.EncodedObject(plumbing.AnyObject, want); err == nil && obj.Type() == plumbing.TagObject {
			if s.Tag, err = rawObject(st, plumbing.TagObject, want); err != nil {
				return nil, err
			}
			s.TagID = want.String()
		}
	}
	return s, nil
}

func rawObject(st storer.EncodedObjectStorer, typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := st.EncodedObject(typ, h)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", typ, h, err)
	}
	if obj.Size() > maxSignedObject {
		return nil, fmt.Errorf("%s %s is %d bytes, over the %d bytes kept for verification", typ, h, obj.Size(), maxSignedObject)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", typ, h, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxSignedObject+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", typ, h, err)
	}
	return b, nil
}

// writeSigned records s beside the checkout name, atomically.
func (f *Fetcher) writeSigned(name string, s *Signed) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(f.dir, tmpPrefix+"signed-*")
	if err != nil {
		return fmt.Errorf("recording signed objects: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("recording signed objects: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(f.dir, name+signedSuffix)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("recording signed objects: %w", err)
	}
	return nil
}

// readSigned returns the signed objects recorded for the checkout name when they fit t
// (the same commit, and the same tag when the ref points at something else), or nil.
func (f *Fetcher) readSigned(name string, t target) *Signed {
	b, err := os.ReadFile(filepath.Join(f.dir, name+signedSuffix))
	if err != nil || len(b) > 4*maxSignedObject {
		return nil
	}
	s := &Signed{}
	if json.Unmarshal(b, s) != nil || s.CommitID != t.commit.String() {
		return nil
	}
	if t.want != t.commit && s.Want != t.want.String() {
		return nil
	}
	return s
}

// withSigned records signed beside a's checkout and returns a carrying it.
func (f *Fetcher) withSigned(a *Artifact, err error, signed *Signed, key string, ignore []string) (*Artifact, error) {
	if err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.writeSigned(DirName(key, a.Commit, ignore), signed); err != nil {
		return nil, err
	}
	a.Signed = signed
	return a, nil
}
