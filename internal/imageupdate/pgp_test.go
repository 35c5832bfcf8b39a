package imageupdate_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitsync-dev/gitsync/internal/imageupdate"
)

// TestOpenPGPSignedCommitVerifies: a commit signed with an armored OpenPGP key verifies
// against its public key.
func TestOpenPGPSignedCommitVerifies(t *testing.T) {
	_, repo, req := fluxRepo(t)
	e, err := openpgp.NewEntity("fluxcdbot", "", req.AuthorEmail, nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	w, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if req.Signer, err = imageupdate.SignerFromSecret(map[string][]byte{imageupdate.SigningKeyPGP: priv.Bytes()}); err != nil {
		t.Fatal(err)
	}
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainOpen(repo.Path())
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(plumbing.NewHash(res.Commit))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := c.Verify(pub.String())
	if err != nil || signer.PrimaryKey.KeyId != e.PrimaryKey.KeyId {
		t.Fatalf("verify: %v", err)
	}
	if _, err := imageupdate.SignerFromSecret(map[string][]byte{imageupdate.SigningKeyPGP: pub.Bytes()}); err == nil {
		t.Fatal("a public key was accepted as a signing key")
	}
}
