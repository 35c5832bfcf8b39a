package verify

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Mode says which Git objects must be signed.
type Mode string

const (
	// ModeHEAD verifies the commit that is checked out.
	ModeHEAD Mode = "HEAD"
	// ModeTag verifies the annotated tag the ref selected.
	ModeTag Mode = "Tag"
	// ModeTagAndHEAD verifies both.
	ModeTagAndHEAD Mode = "TagAndHEAD"
)

// MaxObjectSize bounds a commit or tag object verified: larger ones are refused unread.
const MaxObjectSize = 1 << 20

const sshNamespace = "git" // what git signs commits and tags under

// GitObjects are the raw Git objects (as stored, without the "<type> <size>\0" header)
// of a checkout and the ids they must have.
type GitObjects struct {
	// CommitID and Commit: the commit checked out.
	CommitID string
	Commit   []byte
	// TagID and Tag: the annotated tag the ref selected; empty for a branch, a commit or a
	// lightweight tag.
	TagID string
	Tag   []byte
}

// Git verifies the objects the mode names against keys and returns their signers (the
// tag's first for ModeTagAndHEAD). The objects' contents must hash to their ids.
func Git(objs GitObjects, mode Mode, keys *GitKeys) ([]Signer, error) {
	if keys == nil {
		return nil, errors.New("no keys to verify with")
	}
	var signers []Signer
	if mode == ModeTag || mode == ModeTagAndHEAD {
		if objs.TagID == "" {
			return nil, fmt.Errorf("%w: mode %s needs an annotated tag and commit %s was not selected by one",
				ErrUnverified, mode, objs.CommitID)
		}
		s, err := verifyTag(objs.TagID, objs.Tag, keys)
		if err != nil {
			return nil, err
		}
		signers = append(signers, s)
	}
	switch mode {
	case ModeHEAD, ModeTagAndHEAD:
		s, err := verifyCommit(objs.CommitID, objs.Commit, keys)
		if err != nil {
			return nil, err
		}
		signers = append(signers, s)
	case ModeTag:
	default:
		return nil, fmt.Errorf("unknown verification mode %q (HEAD, Tag or TagAndHEAD)", mode)
	}
	return signers, nil
}

// verifyCommit checks the signature of a raw commit object.
func verifyCommit(id string, raw []byte, keys *GitKeys) (Signer, error) {
	obj, err := memoryObject(plumbing.CommitObject, id, raw)
	if err != nil {
		return Signer{}, fmt.Errorf("commit %s: %w", id, err)
	}
	c := &object.Commit{}
	if err := c.Decode(obj); err != nil {
		return Signer{}, fmt.Errorf("commit %s: decoding: %w", id, err)
	}
	if c.PGPSignature == "" {
		return Signer{}, fmt.Errorf("%w: commit %s is not signed", ErrUnverified, id)
	}
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		return Signer{}, fmt.Errorf("commit %s: %w", id, err)
	}
	s, err := check(payload, c.PGPSignature, keys)
	if err != nil {
		return Signer{}, fmt.Errorf("%w: commit %s: %w", ErrUnverified, id, err)
	}
	return s, nil
}

// verifyTag checks the signature of a raw annotated tag object.
func verifyTag(id string, raw []byte, keys *GitKeys) (Signer, error) {
	obj, err := memoryObject(plumbing.TagObject, id, raw)
	if err != nil {
		return Signer{}, fmt.Errorf("tag %s: %w", id, err)
	}
	t := &object.Tag{}
	if err := t.Decode(obj); err != nil {
		return Signer{}, fmt.Errorf("tag %s: decoding: %w", id, err)
	}
	if t.PGPSignature == "" {
		return Signer{}, fmt.Errorf("%w: tag %s (%s) is not signed", ErrUnverified, t.Name, id)
	}
	payload := &plumbing.MemoryObject{}
	if err := t.EncodeWithoutSignature(payload); err != nil {
		return Signer{}, fmt.Errorf("tag %s: %w", id, err)
	}
	s, err := check(payload, t.PGPSignature, keys)
	if err != nil {
		return Signer{}, fmt.Errorf("%w: tag %s (%s): %w", ErrUnverified, t.Name, id, err)
	}
	return s, nil
}

// memoryObject wraps raw as an object of type typ after checking that it hashes to id.
func memoryObject(typ plumbing.ObjectType, id string, raw []byte) (*plumbing.MemoryObject, error) {
	if len(raw) == 0 {
		return nil, errors.New("object not available")
	}
	if len(raw) > MaxObjectSize {
		return nil, fmt.Errorf("object of %d bytes is over the %d bytes verified", len(raw), MaxObjectSize)
	}
	if got := plumbing.ComputeHash(typ, raw).String(); got != strings.ToLower(id) {
		return nil, fmt.Errorf("object content hashes to %s", got)
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(typ)
	if _, err := obj.Write(raw); err != nil {
		return nil, err
	}
	return obj, nil
}

// check verifies signature (armored OpenPGP or SSH, as git writes them) over payload.
func check(payload *plumbing.MemoryObject, signature string, keys *GitKeys) (Signer, error) {
	r, err := payload.Reader()
	if err != nil {
		return Signer{}, err
	}
	defer r.Close()
	switch {
	case strings.HasPrefix(signature, "-----BEGIN PGP SIGNATURE-----"):
		if len(keys.openpgp) == 0 {
			return Signer{}, errors.New("signed with OpenPGP and no OpenPGP key is given")
		}
		e, err := openpgp.CheckArmoredDetachedSignature(keys.openpgp, r, strings.NewReader(signature), nil)
		if err != nil {
			return Signer{}, fmt.Errorf("OpenPGP signature: %w", err)
		}
		return openpgpSigner(e), nil
	case strings.HasPrefix(signature, "-----BEGIN SSH SIGNATURE-----"):
		return checkSSH(r, signature, keys.ssh)
	default:
		return Signer{}, errors.New("signature is neither OpenPGP nor SSH")
	}
}

func openpgpSigner(e *openpgp.Entity) Signer {
	s := Signer{Scheme: "openpgp", Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))}
	if id := e.PrimaryIdentity(); id != nil {
		s.Identity = id.Name
	}
	return s
}

// checkSSH verifies an armored SSH signature made in git's namespace by one of signers.
func checkSSH(payload interface{ Read([]byte) (int, error) }, signature string, signers []allowedSigner) (Signer, error) {
	sig, err := sshsig.Unarmor([]byte(signature))
	if err != nil {
		return Signer{}, fmt.Errorf("SSH signature: %w", err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	for _, as := range signers {
		if !bytes.Equal(as.key.Marshal(), sig.PublicKey.Marshal()) {
			continue
		}
		if err := sshsig.Verify(payload, sig, as.key, sig.HashAlgorithm, sshNamespace); err != nil {
			return Signer{}, fmt.Errorf("SSH signature by %s: %w", fp, err)
		}
		return Signer{Scheme: "ssh", Fingerprint: fp, Identity: as.principals}, nil
	}
	return Signer{}, fmt.Errorf("SSH signature by %s, a key not in the allowed signers", fp)
}
