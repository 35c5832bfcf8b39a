// Package signing makes keys and signed Git objects for tests: OpenPGP and SSH signatures
// as git writes them, generated in process (no gpg or ssh-keygen binary).
package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
	"helm.sh/helm/v4/pkg/provenance"
)

// Key signs Git payloads; Public is what a verification Secret holds for it (an armored
// OpenPGP public key, or an allowed_signers line).
type Key struct {
	Sign   func(payload []byte) (string, error)
	Public []byte
	// Fingerprint is how verify names the key (upper-case hex, or SSH's SHA256:…).
	Fingerprint string
	// Entity is the OpenPGP key (nil for SSH); Helm provenance signs with it.
	Entity *openpgp.Entity
}

// OpenPGP generates an OpenPGP key for name <email>.
func OpenPGP(t testing.TB, name, email string) *Key {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatalf("signing: generating OpenPGP key: %v", err)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &Key{
		Public:      append(pub.Bytes(), '\n'),
		Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint),
		Entity:      e,
		Sign: func(payload []byte) (string, error) {
			var sig bytes.Buffer
			if err := openpgp.ArmoredDetachSign(&sig, e, bytes.NewReader(payload), nil); err != nil {
				return "", err
			}
			return sig.String() + "\n", nil
		},
	}
}

// SSH generates an ed25519 SSH key whose allowed_signers line names principal.
func SSH(t testing.TB, principal string) *Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	line := principal + ` namespaces="git" ` + string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + "\n"
	return &Key{
		Public:      []byte(line),
		Fingerprint: ssh.FingerprintSHA256(signer.PublicKey()),
		Sign: func(payload []byte) (string, error) {
			sig, err := sshsig.Sign(bytes.NewReader(payload), signer, sshsig.HashSHA512, "git")
			if err != nil {
				return "", err
			}
			return string(sshsig.Armor(sig)), nil
		},
	}
}

func readAll(r io.Reader) []byte {
	b, _ := io.ReadAll(r)
	return b
}

// Provenance is the clear-signed provenance file (as `helm package --sign` writes it) of
// the chart archive named filename whose Chart.yaml is chartYAML, signed by key (an
// OpenPGP one).
func Provenance(t testing.TB, key *Key, archive []byte, filename, chartYAML string) []byte {
	t.Helper()
	if key.Entity == nil {
		t.Fatal("signing: Helm provenance needs an OpenPGP key")
	}
	prov, err := (&provenance.Signatory{Entity: key.Entity}).ClearSign(archive, filename, []byte(chartYAML))
	if err != nil {
		t.Fatalf("signing: provenance of %s: %v", filename, err)
	}
	return []byte(prov)
}
