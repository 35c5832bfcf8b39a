package decrypt

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

func TestFileAgeRoundTrip(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	enc := encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id))
	g.Expect(string(enc)).To(ContainSubstring("name: db"), "only data/stringData are encrypted")

	d := decryptor(t, map[string][]byte{"identity.agekey": key, "unrelated": []byte("x")})
	plain, err := d.File("secrets/db.yaml", enc)
	g.Expect(err).NotTo(HaveOccurred())
	obj := object(t, plain)
	g.Expect(obj.Object).NotTo(HaveKey("sops"))
	g.Expect(str(obj.Object, "stringData", "password")).To(Equal(secretValue))
	g.Expect(obj.GetName()).To(Equal("db"))
}

func TestFilePGPRoundTrip(t *testing.T) {
	g := NewWithT(t)
	e, key := pgpKey(t)
	enc := encrypt(t, sopsfile.JSON, []byte(`{"password": "`+secretValue+`", "replicas": 3}`), "", pgpMaster(t, e))
	g.Expect(string(enc)).To(ContainSubstring(fingerprint(e)))

	d := decryptor(t, map[string][]byte{"ops.asc": key})
	plain, err := d.File("values.json", enc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(ContainSubstring(`"password": "` + secretValue + `"`))
	g.Expect(string(plain)).To(ContainSubstring(`"replicas": 3`))
	g.Expect(string(plain)).NotTo(ContainSubstring("sops"))
}

func TestFileFormats(t *testing.T) {
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"k.agekey": key})
	for _, tc := range []struct {
		name   string
		format sopsfile.Format
		plain  string
		want   string
	}{
		{name: "app.env", format: sopsfile.Dotenv, plain: "DB_PASSWORD=" + secretValue + "\nDB_USER=app\n", want: "DB_PASSWORD=" + secretValue + "\nDB_USER=app\n"},
		{name: "app.ini", format: sopsfile.INI, plain: "[db]\npassword = " + secretValue + "\n", want: "password = " + secretValue},
		{name: "tls.key", format: sopsfile.Binary, plain: "-----BEGIN KEY-----\n" + secretValue + "\n", want: "-----BEGIN KEY-----\n" + secretValue + "\n"},
		{name: "values.yml", format: sopsfile.YAML, plain: "db:\n  password: " + secretValue + "\n", want: "password: " + secretValue},
		// A YAML document whose name does not say YAML is read as what it is.
		{name: "secret.enc", format: sopsfile.YAML, plain: "password: " + secretValue + "\n", want: "password: " + secretValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			enc := encrypt(t, tc.format, []byte(tc.plain), "", ageMaster(t, id))
			plain, err := d.File(tc.name, enc)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.format == sopsfile.Dotenv || tc.format == sopsfile.Binary {
				g.Expect(string(plain)).To(Equal(tc.want))
			} else {
				g.Expect(string(plain)).To(ContainSubstring(tc.want))
			}
			g.Expect(string(plain)).NotTo(ContainSubstring("ENC["))
		})
	}
}

func TestFileNotEncryptedIsUnchanged(t *testing.T) {
	_, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"k.agekey": key})
	for name, data := range map[string]string{
		"plain.yaml":     secretYAML,
		"plain.env":      "A=1\n",
		"mentions.yaml":  "note: 'the text ENC[AES256_GCM,data:x] and mac: ENC[ are not a SOPS file'\n",
		"logo.png":       "\x89PNG\r\n",
		"kustomization":  "resources: [a.yaml]\n",
		"sops-field.yml": "sops: {mac: nothing}\n",
	} {
		g := NewWithT(t)
		out, err := d.File(name, []byte(data))
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(string(out)).To(Equal(data), name)
	}
}

func TestWrongKey(t *testing.T) {
	g := NewWithT(t)
	right, _ := ageKey(t)
	wrong, wrongKey := ageKey(t)
	pgpRight, _ := pgpKey(t)
	pgpWrong, pgpWrongKey := pgpKey(t)
	enc := encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, right), pgpMaster(t, pgpRight))
	d := decryptor(t, map[string][]byte{"a.agekey": wrongKey, "b.asc": pgpWrongKey})

	_, err := d.File("apps/db/secret.yaml", enc)
	noSecret(t, err)
	t.Log(err)
	for _, want := range []string{
		"apps/db/secret.yaml",
		"age:" + right.Recipient().String(), "pgp:" + fingerprint(pgpRight), // the document's keys
		"age:" + wrong.Recipient().String(), "pgp:" + fingerprint(pgpWrong), // the keys tried
	} {
		g.Expect(err.Error()).To(ContainSubstring(want))
	}
	g.Expect(err.Error()).NotTo(ContainSubstring("ENC["))

	_, err = d.Manifests("apps/db/secrets.yaml", enc)
	noSecret(t, err)
	g.Expect(err.Error()).To(ContainSubstring("apps/db/secrets.yaml (document 1)"))
	g.Expect(err.Error()).To(ContainSubstring("age:" + right.Recipient().String()))
}

// The environment and the home directory are never consulted: the right key in
// SOPS_AGE_KEY does not help a Decryptor that does not hold it.
func TestOnlyGivenKeys(t *testing.T) {
	right, rightKey := ageKey(t)
	_, wrongKey := ageKey(t)
	t.Setenv("SOPS_AGE_KEY", string(rightKey))
	t.Setenv("HOME", t.TempDir())
	enc := encrypt(t, sopsfile.YAML, []byte(secretYAML), "", ageMaster(t, right))
	d := decryptor(t, map[string][]byte{"a.agekey": wrongKey})
	_, err := d.File("s.yaml", enc)
	noSecret(t, err)
	_, err = decryptor(t, map[string][]byte{"a.agekey": rightKey}).File("s.yaml", enc)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

func TestTampered(t *testing.T) {
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	enc := string(encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)))

	// Replace one character of the MAC's ciphertext.
	i := strings.Index(enc, "mac: ENC[AES256_GCM,data:") + len("mac: ENC[AES256_GCM,data:")
	flip := map[byte]byte{'A': 'B'}[enc[i]]
	if flip == 0 {
		flip = 'A'
	}
	badMAC := enc[:i] + string(flip) + enc[i+1:]
	// Change a value that is not encrypted but covered by the MAC.
	renamed := strings.Replace(enc, "name: db", "name: other", 1)
	// Swap the two encrypted values: each is bound to its path.
	swapped := swapEncrypted(t, enc)

	for name, doc := range map[string]string{"mac": badMAC, "unencrypted value": renamed, "swapped values": swapped} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := d.File("secret.yaml", []byte(doc))
			noSecret(t, err)
			g.Expect(err.Error()).To(ContainSubstring("secret.yaml"))
			g.Expect(err.Error()).To(MatchRegexp("tampered"))

			_, err = d.Manifests("rendered.yaml", []byte("kind: ConfigMap\n---\n"+doc))
			noSecret(t, err)
			g.Expect(err.Error()).To(ContainSubstring("rendered.yaml (document 2)"))

			// A decoded object lost its key order, so its MAC cannot be checked in full:
			// it is refused, whatever was changed.
			err = d.Objects([]*unstructured.Unstructured{object(t, []byte(doc))}, nil)
			noSecret(t, err)
			g.Expect(err.Error()).To(ContainSubstring("Secret/prod/"))
		})
	}
}

// swapEncrypted exchanges the ciphertexts of stringData.password and stringData.port.
func swapEncrypted(t *testing.T, enc string) string {
	t.Helper()
	var pw, port string
	for _, line := range strings.Split(enc, "\n") {
		switch {
		case strings.Contains(line, "password: ENC["):
			pw = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "password:"))
		case strings.Contains(line, "port: ENC["):
			port = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "port:"))
		}
	}
	if pw == "" || port == "" {
		t.Fatalf("no encrypted values in\n%s", enc)
	}
	out := strings.Replace(enc, pw, "@PW@", 1)
	out = strings.Replace(out, port, pw, 1)
	return strings.Replace(out, "@PW@", port, 1)
}

// Objects decrypts the entries of a Secret that hold whole encrypted files, leaves
// plain objects alone and refuses a SOPS document held as an object (its MAC cannot be
// checked without its file's order); Manifests decrypts any kind, types kept.
func TestObjects(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	e, pgpPriv := pgpKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key, "b.asc": pgpPriv})

	// Any kind: a whole custom resource, every value encrypted but the MAC-covered
	// structure (ints and bools keep their types).
	custom := encrypt(t, sopsfile.YAML, []byte(`apiVersion: example.com/v1
kind: Database
metadata:
  name: orders
spec:
  replicas: 3
  tls: true
  password: `+secretValue+`
`), "^spec$", ageMaster(t, id))
	plain, err := d.Manifests("db.yaml", custom)
	g.Expect(err).NotTo(HaveOccurred())
	db := object(t, plain)
	g.Expect(db.Object).NotTo(HaveKey("sops"))
	g.Expect(db.Object["spec"]).To(HaveKeyWithValue("replicas", float64(3)))
	g.Expect(db.Object["spec"]).To(HaveKeyWithValue("tls", true))
	g.Expect(str(db.Object, "spec", "password")).To(Equal(secretValue))

	env := encrypt(t, sopsfile.Dotenv, []byte("TOKEN="+secretValue+"\n"), "", ageMaster(t, id))
	generated := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "generated-7f8d"},
		"data": map[string]any{
			"app.env": base64.StdEncoding.EncodeToString(env),
			"plain":   base64.StdEncoding.EncodeToString([]byte("not encrypted")),
		},
		"stringData": map[string]any{"inline.env": string(env)},
	}}
	plainCM := object(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: ${VAR}\n"))
	before := plainCM.DeepCopy()

	g.Expect(d.Objects([]*unstructured.Unstructured{generated, plainCM}, nil)).To(Succeed())

	data, _, _ := unstructured.NestedStringMap(generated.Object, "data")
	got, err := base64.StdEncoding.DecodeString(data["app.env"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal("TOKEN=" + secretValue + "\n"))
	g.Expect(data["plain"]).To(Equal(base64.StdEncoding.EncodeToString([]byte("not encrypted"))))
	g.Expect(str(generated.Object, "stringData", "inline.env")).To(Equal("TOKEN=" + secretValue + "\n"))
	g.Expect(plainCM).To(Equal(before))

	secret := object(t, encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", pgpMaster(t, e)))
	err = d.Objects([]*unstructured.Unstructured{plainCM, secret}, func(i int) string { return []string{"cm.yaml", "secret.yaml"}[i] })
	noSecret(t, err)
	g.Expect(err.Error()).To(ContainSubstring("decrypting secret.yaml: Secret/prod/db: a SOPS document is only decrypted from its file"))
}

func TestManifests(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	enc := encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id))
	cm := "# a comment kept as it is\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	stream := []byte(cm + "---\n" + string(enc) + "--- # trailing\n" + cm)

	out, err := d.Manifests("manifests.yaml", stream)
	g.Expect(err).NotTo(HaveOccurred())
	docs := splitDocuments(out)
	g.Expect(docs).To(HaveLen(3))
	g.Expect(string(docs[0].body)).To(Equal(cm))
	g.Expect(string(docs[2].sep)).To(Equal("--- # trailing\n"))
	g.Expect(string(docs[2].body)).To(Equal(cm))
	secret := object(t, docs[1].body)
	g.Expect(secret.Object).NotTo(HaveKey("sops"))
	g.Expect(str(secret.Object, "stringData", "password")).To(Equal(secretValue))

	// A stream without SOPS documents is returned as it is.
	plain := []byte(cm + "---\n" + cm)
	out, err = d.Manifests("plain.yaml", plain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(out, plain)).To(BeTrue())
}

// A multi-document file encrypted as a whole shares one MAC over all its documents.
func TestManifestsMultiDocumentFile(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	two := secretYAML + "---\n" + strings.Replace(secretYAML, "name: db", "name: cache", 1)
	enc := encrypt(t, sopsfile.YAML, []byte(two), "^(data|stringData)$", ageMaster(t, id))

	out, err := d.Manifests("both.yaml", enc)
	g.Expect(err).NotTo(HaveOccurred())
	docs := splitDocuments(out)
	g.Expect(docs).To(HaveLen(2))
	for i, name := range []string{"db", "cache"} {
		obj := object(t, docs[i].body)
		g.Expect(obj.GetName()).To(Equal(name))
		g.Expect(str(obj.Object, "stringData", "password")).To(Equal(secretValue))
	}
}

func TestNewKeys(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	e, pgpPriv := pgpKey(t)
	k, err := NewKeys(map[string][]byte{"b.asc": pgpPriv, "a.agekey": key})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k.Describe()).To(Equal([]string{"age:" + id.Recipient().String(), "pgp:" + fingerprint(e)}))

	_, err = NewKeys(map[string][]byte{"readme": []byte("x")})
	g.Expect(err).To(MatchError(ContainSubstring("no keys")))

	// A malformed identity file: the error names the entry, not its content.
	bad := "AGE-SECRET-KEY-1" + strings.Repeat("Q", 10) + secretValue
	_, err = NewKeys(map[string][]byte{"broken.agekey": []byte(bad)})
	g.Expect(err).To(MatchError(ContainSubstring(`"broken.agekey"`)))
	g.Expect(err.Error()).NotTo(ContainSubstring(secretValue))
	g.Expect(err.Error()).NotTo(ContainSubstring("AGE-SECRET-KEY"))

	// A public key is no decryption key.
	var pub bytes.Buffer
	w, _ := pgpArmorPublic(&pub)
	g.Expect(e.Serialize(w)).To(Succeed())
	g.Expect(w.Close()).To(Succeed())
	_, err = NewKeys(map[string][]byte{"pub.asc": pub.Bytes()})
	g.Expect(err).To(MatchError(ContainSubstring("has no private key")))

	_, err = NewDecryptor(nil)
	g.Expect(err).To(HaveOccurred())
}

// str is the string at fields of obj, or "" when there is none.
func str(obj map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj, fields...)
	return s
}

// A Secret's base64 data encrypted for two recipients: either key decrypts it, and
// the value is the base64 text that was encrypted.
func TestSecretDataEitherRecipient(t *testing.T) {
	id, ageKeyData := ageKey(t)
	e, pgpPriv := pgpKey(t)
	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	doc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\ntype: Opaque\ndata:\n  key: " + b64 + "\n"
	enc := encrypt(t, sopsfile.YAML, []byte(doc), "^(data|stringData)$", ageMaster(t, id), pgpMaster(t, e))
	for name, keys := range map[string]map[string][]byte{
		"age": {"a.agekey": ageKeyData},
		"pgp": {"b.asc": pgpPriv},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			plain, err := decryptor(t, keys).Manifests("tls.yaml", enc)
			g.Expect(err).NotTo(HaveOccurred())
			obj := object(t, plain)
			g.Expect(str(obj.Object, "data", "key")).To(Equal(b64))
			g.Expect(obj.Object).NotTo(HaveKey("sops"))
		})
	}
}

// One Decryptor serves concurrent renders.
func TestConcurrentUse(t *testing.T) {
	id, key := ageKey(t)
	e, pgpPriv := pgpKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key, "b.asc": pgpPriv})
	docs := [][]byte{
		encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)),
		encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", pgpMaster(t, e)),
	}
	errs := make(chan error, 8)
	for i := range 8 {
		doc := docs[i%2]
		go func() {
			plain, err := d.Manifests("secret.yaml", doc)
			if err == nil && !strings.Contains(string(plain), secretValue) {
				err = errors.New("not decrypted")
			}
			errs <- err
		}()
	}
	for range 8 {
		NewWithT(t).Expect(<-errs).NotTo(HaveOccurred())
	}
}
