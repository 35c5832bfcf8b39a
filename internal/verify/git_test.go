package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

var tree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904") // the empty tree

func keysOf(t *testing.T, keys ...*signing.Key) *verify.GitKeys {
	t.Helper()
	data := map[string][]byte{}
	for i, k := range keys {
		data[string(rune('a'+i))] = k.Public
	}
	gk, err := verify.ParseGitKeys(data)
	if err != nil {
		t.Fatalf("ParseGitKeys: %v", err)
	}
	return gk
}

func TestGitCommitSignedByAGivenKeyVerifies(t *testing.T) {
	pgp := signing.OpenPGP(t, "Alice", "alice@example.com")
	sshKey := signing.SSH(t, "bob@example.com")
	keys := keysOf(t, pgp, sshKey)
	for _, tc := range []struct {
		key      *signing.Key
		scheme   string
		identity string
	}{
		{pgp, "openpgp", "Alice <alice@example.com>"},
		{sshKey, "ssh", "bob@example.com"},
	} {
		c := signing.Commit(t, nil, tc.key, tree, "signed\n")
		signers, err := verify.Git(verify.GitObjects{CommitID: c.ID, Commit: c.Content}, verify.ModeHEAD, keys)
		if err != nil {
			t.Fatalf("%s: %v", tc.scheme, err)
		}
		want := verify.Signer{Scheme: tc.scheme, Fingerprint: tc.key.Fingerprint, Identity: tc.identity}
		if len(signers) != 1 || signers[0] != want {
			t.Errorf("%s: signers = %+v, want %+v", tc.scheme, signers, want)
		}
	}
}

func TestGitCommitRefused(t *testing.T) {
	given := signing.OpenPGP(t, "Alice", "alice@example.com")
	givenSSH := signing.SSH(t, "alice@example.com")
	other := signing.OpenPGP(t, "Mallory", "mallory@example.com")
	otherSSH := signing.SSH(t, "mallory@example.com")
	keys := keysOf(t, given, givenSSH)

	unsigned := signing.Commit(t, nil, nil, tree, "unsigned\n")
	byOther := signing.Commit(t, nil, other, tree, "other\n")
	byOtherSSH := signing.Commit(t, nil, otherSSH, tree, "other ssh\n")
	good := signing.Commit(t, nil, given, tree, "good\n")
	tampered := []byte(strings.Replace(string(good.Content), "good", "evil", 1))
	for name, tc := range map[string]struct {
		objs verify.GitObjects
		want string
	}{
		"unsigned":         {verify.GitObjects{CommitID: unsigned.ID, Commit: unsigned.Content}, "is not signed"},
		"another key":      {verify.GitObjects{CommitID: byOther.ID, Commit: byOther.Content}, "OpenPGP signature"},
		"another SSH key":  {verify.GitObjects{CommitID: byOtherSSH.ID, Commit: byOtherSSH.Content}, "not in the allowed signers"},
		"content mismatch": {verify.GitObjects{CommitID: good.ID, Commit: tampered}, "hashes to"},
		"missing object":   {verify.GitObjects{CommitID: good.ID}, "not available"},
		"tag mode, no tag": {verify.GitObjects{CommitID: good.ID, Commit: good.Content}, "needs an annotated tag"},
	} {
		mode := verify.ModeHEAD
		if strings.HasPrefix(name, "tag") {
			mode = verify.ModeTag
		}
		signers, err := verify.Git(tc.objs, mode, keys)
		if err == nil || signers != nil {
			t.Errorf("%s: signers %v, err %v; want refused", name, signers, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.objs.CommitID) {
			t.Errorf("%s: error %q does not say %q and name the commit", name, err, tc.want)
		}
	}
	// A signature made by the right key over a changed commit (its id recomputed) fails.
	withSig := strings.Replace(string(good.Content), "good", "evil", 1)
	id := plumbing.ComputeHash(plumbing.CommitObject, []byte(withSig)).String()
	if _, err := verify.Git(verify.GitObjects{CommitID: id, Commit: []byte(withSig)}, verify.ModeHEAD, keys); !errors.Is(err, verify.ErrUnverified) {
		t.Errorf("moved signature: err = %v, want ErrUnverified", err)
	}
}

func TestGitTagModes(t *testing.T) {
	key := signing.SSH(t, "release@example.com")
	keys := keysOf(t, key)
	signedCommit := signing.Commit(t, nil, key, tree, "c\n")
	unsignedCommit := signing.Commit(t, nil, nil, tree, "u\n")
	signedTag := signing.Tag(t, nil, key, "v1.0.0", plumbing.NewHash(unsignedCommit.ID))
	unsignedTag := signing.Tag(t, nil, nil, "v1.0.1", plumbing.NewHash(signedCommit.ID))

	objs := func(c, tag signing.Raw) verify.GitObjects {
		return verify.GitObjects{CommitID: c.ID, Commit: c.Content, TagID: tag.ID, Tag: tag.Content}
	}
	if s, err := verify.Git(objs(unsignedCommit, signedTag), verify.ModeTag, keys); err != nil || len(s) != 1 {
		t.Errorf("Tag mode, signed tag: %v %v", s, err)
	}
	if _, err := verify.Git(objs(unsignedCommit, signedTag), verify.ModeTagAndHEAD, keys); err == nil || !strings.Contains(err.Error(), "commit "+unsignedCommit.ID+" is not signed") {
		t.Errorf("TagAndHEAD, unsigned commit: err = %v", err)
	}
	if _, err := verify.Git(objs(signedCommit, unsignedTag), verify.ModeTag, keys); err == nil || !strings.Contains(err.Error(), "v1.0.1") {
		t.Errorf("Tag mode, unsigned tag: err = %v", err)
	}
	bothSigned := signing.Tag(t, nil, key, "v2", plumbing.NewHash(signedCommit.ID))
	s, err := verify.Git(objs(signedCommit, bothSigned), verify.ModeTagAndHEAD, keys)
	if err != nil || len(s) != 2 || verify.Join(s) != "ssh:"+key.Fingerprint+" (release@example.com)" {
		t.Errorf("TagAndHEAD, both signed: %v %v (joined %q)", s, err, verify.Join(s))
	}
}

func TestParseGitKeys(t *testing.T) {
	key := signing.SSH(t, "a@example.com")
	fields := strings.SplitN(strings.TrimSpace(string(key.Public)), " ", 3) // principal, namespaces, key
	for name, tc := range map[string]struct {
		data    string
		wantErr string
		usable  bool
	}{
		"allowed signer":         {string(key.Public), "", true},
		"comments and blanks":    {"# team\n\n" + string(key.Public), "", true},
		"quoted principals":      {`"a@example.com,b@example.com" ` + fields[2], "", true},
		"other namespace only":   {fields[0] + ` namespaces="file" ` + fields[2], "no OpenPGP public key or SSH allowed signer", false},
		"cert-authority refused": {fields[0] + " cert-authority " + fields[2], "cert-authority is not supported", false},
		"valid-before refused":   {fields[0] + ` valid-before="20300101" ` + fields[2], "valid-before is not supported", false},
		"garbage":                {"not a key", "line 1", false},
		"empty":                  {"", "no OpenPGP public key", false},
		"broken OpenPGP block":   {"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n", "reading OpenPGP keys", false},
	} {
		keys, err := verify.ParseGitKeys(map[string][]byte{"k": []byte(tc.data)})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		c := signing.Commit(t, nil, key, tree, name+"\n")
		if _, err := verify.Git(verify.GitObjects{CommitID: c.ID, Commit: c.Content}, verify.ModeHEAD, keys); (err == nil) != tc.usable {
			t.Errorf("%s: verify err = %v, usable %v", name, err, tc.usable)
		}
	}
}
