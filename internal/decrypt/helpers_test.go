package decrypt

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
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
	e, armored, err := sopsenc.PGPKey("gitsync test")
	if err != nil {
		t.Fatal(err)
	}
	return e, armored
}

// recipient adds one recipient to an encryption (see encrypt).
type recipient func(*sopsenc.Options)

// ageMaster is the age recipient of id.
func ageMaster(_ testing.TB, id *age.X25519Identity) recipient {
	return func(o *sopsenc.Options) { o.Age = append(o.Age, id.Recipient().String()) }
}

// pgpMaster is the OpenPGP recipient e.
func pgpMaster(_ testing.TB, e *openpgp.Entity) recipient {
	return func(o *sopsenc.Options) { o.PGP = append(o.PGP, e) }
}

// encrypt encrypts plain (in format) as `sops --encrypt` would (sopsenc.Encrypt), for
// the recipients; encryptedRegex limits what is encrypted ("" = every value).
func encrypt(t testing.TB, format sopsfile.Format, plain []byte, encryptedRegex string, recipients ...recipient) []byte {
	t.Helper()
	opts := sopsenc.Options{EncryptedRegex: encryptedRegex}
	for _, r := range recipients {
		r(&opts)
	}
	name := map[sopsfile.Format]string{sopsfile.YAML: "f.yaml", sopsfile.JSON: "f.json", sopsfile.Dotenv: "f.env", sopsfile.INI: "f.ini", sopsfile.Binary: "f.bin"}[format]
	out, err := sopsenc.Encrypt(name, plain, opts)
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
