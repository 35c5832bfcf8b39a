package decrypt

import (
	"bytes"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/pgp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The secret value every test encrypts; no error may ever contain it.
const secretValue = "hunter2-s3cr3t-value"

// ageKey makes an age identity and returns it with its Secret data entry.
func ageKey(t testing.TB) (*age.X25519Identity, []byte) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id, []byte("# created by the test\n" + id.String() + "\n")
}

// pgpKey makes an OpenPGP key (EdDSA with an ECDH subkey) and returns it with its
// armored private key.
func pgpKey(t testing.TB) (*openpgp.Entity, []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("gitsync test", "", "test@gitsync.dev", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := pgparmor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, buf.Bytes()
}

// ageMaster is an age master key of a SOPS document for id's recipient.
func ageMaster(t testing.TB, id *age.X25519Identity) func(dataKey []byte) keys.MasterKey {
	return func(dataKey []byte) keys.MasterKey {
		mk := &sopsage.MasterKey{Recipient: id.Recipient().String()}
		if err := mk.Encrypt(dataKey); err != nil {
			t.Fatal(err)
		}
		return mk
	}
}

// pgpMaster is an OpenPGP master key of a SOPS document for e, encrypted here with
// go-crypto (SOPS' own would look for the public key in a GnuPG home).
func pgpMaster(t testing.TB, e *openpgp.Entity) func(dataKey []byte) keys.MasterKey {
	return func(dataKey []byte) keys.MasterKey {
		var buf bytes.Buffer
		aw, err := pgparmor.Encode(&buf, "PGP MESSAGE", nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := openpgp.Encrypt(aw, []*openpgp.Entity{e}, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(dataKey); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := aw.Close(); err != nil {
			t.Fatal(err)
		}
		mk := pgp.NewMasterKeyFromFingerprint(fingerprint(e))
		mk.EncryptedKey = buf.String()
		return mk
	}
}

// encrypt encrypts plain (in format) as `sops --encrypt` would, for the master keys
// that masters make; encryptedRegex limits what is encrypted ("" = every value).
func encrypt(t testing.TB, format formats.Format, plain []byte, encryptedRegex string, masters ...func([]byte) keys.MasterKey) []byte {
	t.Helper()
	st := newStore(format)
	loader, ok := st.(sops.PlainFileLoader)
	if !ok {
		t.Fatalf("store %T loads no plain files", st)
	}
	branches, err := loader.LoadPlainFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	var group sops.KeyGroup
	for _, m := range masters {
		group = append(group, m(dataKey))
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: encryptedRegex,
		Version:        "3.13.3",
	}}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		t.Fatal(err)
	}
	tree.Metadata.LastModified = time.Now().UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	emitter, ok := st.(sops.EncryptedFileEmitter)
	if !ok {
		t.Fatalf("store %T emits no encrypted files", st)
	}
	out, err := emitter.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(secretValue)) {
		t.Fatal("the encrypted file holds the plain secret value")
	}
	return out
}

// decryptor is a Decryptor over the given Secret data.
func decryptor(t testing.TB, data map[string][]byte) *Decryptor {
	t.Helper()
	k, err := NewKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecryptor(k)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// object decodes one YAML document.
func object(t testing.TB, doc []byte) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// noSecret fails the test when err's message holds the secret value.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error")
	}
	if strings.Contains(err.Error(), secretValue) {
		t.Fatalf("the error holds the secret value: %v", err)
	}
}

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: prod
type: Opaque
stringData:
  password: ` + secretValue + `
  port: "5432"
`

// pgpArmorPublic armors an OpenPGP public key into w.
func pgpArmorPublic(w io.Writer) (io.WriteCloser, error) {
	return pgparmor.Encode(w, openpgp.PublicKeyType, nil)
}
