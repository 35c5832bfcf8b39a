package decrypt

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

// Documents of every shape SOPS handles, per format: nested mappings, lists (of
// scalars, of mappings, nested), ints, floats, bools, nulls, empty and multiline
// strings, comments, and keys that the rules leave in the clear.
var compatDocs = map[string]string{
	"doc.yaml": `# a head comment
apiVersion: v1
kind: Secret
metadata:
    name: db # an inline comment
    labels:
        tier: backend
stringData:
    password: ` + secretValue + `
    multiline: |
        line one
        line two
    empty: ""
spec:
    replicas: 3
    ratio: 0.25
    whole: 2.0
    enabled: true
    disabled: false
    nothing: null
    # a comment in a mapping
    hosts:
        - a.example.com
        # a comment in a list
        - b.example.com
    ports:
        - name: http
          port: 80
        - name: https
          port: 443
    matrix:
        - - 1
          - 2
        - - x
    token_unencrypted: visible
    token_plain: visible-too
    token_secret: ` + secretValue + `
    meta_note: clear
    timestamp: 2024-01-02T03:04:05Z
    quoted: "042"
`,
	"doc.json": `{
	"password": "` + secretValue + `",
	"html": "<a href=\"x\">&</a>",
	"unicode": "grüße ✓",
	"multiline": "one\ntwo",
	"nested": {"replicas": 3, "ratio": 0.5, "big": 12345678901234567, "enabled": true, "none": null, "empty": ""},
	"list": [1, "two", {"three": 3}, [4, 5], []],
	"token_unencrypted": "visible",
	"token_secret": "` + secretValue + `",
	"meta": {"note": "clear"}
}
`,
	"doc.env": "# a comment\nPASSWORD=" + secretValue + "\nMULTILINE=one\\ntwo\nEMPTY=\nTOKEN_unencrypted=visible\nTOKEN_secret=" + secretValue + "\nmeta_NOTE=clear\n",
	"doc.ini": "; a section comment\n[db]\npassword = " + secretValue + "\n# a key comment\nport = 5432\ntoken_unencrypted = visible\n\n[meta]\nnote = clear\ntoken_secret = " + secretValue + "\n",
	"doc.bin": "-----BEGIN KEY-----\n" + secretValue + "\n\ttabs and \"quotes\" and <html> \u00e9\n",
}

// TestCompatibilityWithSOPS decrypts files written by SOPS' own packages (sopsenc), for
// every format, both key types and every rule of what is encrypted, and expects exactly
// what SOPS' own decryption of the same file writes.
func TestCompatibilityWithSOPS(t *testing.T) {
	id, ageData := ageKey(t)
	e, pgpData := pgpKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": ageData, "b.asc": pgpData})
	keys := map[string]sopsenc.Options{
		"age": {Age: []string{id.Recipient().String()}},
		"pgp": {PGP: []*openpgp.Entity{e}},
	}
	rules := map[string]func(*sopsenc.Options){
		"default":            func(*sopsenc.Options) {},
		"unencrypted_suffix": func(o *sopsenc.Options) { o.UnencryptedSuffix = "_plain" },
		"encrypted_suffix":   func(o *sopsenc.Options) { o.EncryptedSuffix = "_secret" },
		"encrypted_regex":    func(o *sopsenc.Options) { o.EncryptedRegex = "^(stringData|password|PASSWORD|db|nested)$" },
		"unencrypted_regex":  func(o *sopsenc.Options) { o.UnencryptedRegex = "^(meta|meta_NOTE)" },
		"mac_only_encrypted": func(o *sopsenc.Options) {
			o.MACOnlyEncrypted = true
			o.EncryptedRegex = "^(stringData|password|PASSWORD|db)$"
		},
		"encrypted_comments":  func(o *sopsenc.Options) { o.EncryptedCommentRegex = "comment" },
		"unencrypted_comment": func(o *sopsenc.Options) { o.UnencryptedCommentRegex = "in a list" },
	}
	for name, plain := range compatDocs {
		for keyName, base := range keys {
			for ruleName, rule := range rules {
				t.Run(name+"/"+keyName+"/"+ruleName, func(t *testing.T) {
					g := NewWithT(t)
					opts := base
					rule(&opts)
					enc, dataKey, err := sopsenc.EncryptKey(name, []byte(plain), opts)
					g.Expect(err).NotTo(HaveOccurred())
					want, err := sopsenc.DecryptWithDataKey(name, enc, dataKey)
					g.Expect(err).NotTo(HaveOccurred())
					got, err := d.File(name, enc)
					g.Expect(err).NotTo(HaveOccurred())
					if string(got) != string(want) {
						t.Fatalf("decrypted:\n%s\nsops --decrypt:\n%s", got, want)
					}
					// A decoded object has no comments left to apply comment rules to
					// (as with SOPS' own JSON store): only the other rules apply.
					if strings.HasSuffix(name, ".yaml") && !strings.Contains(ruleName, "comment") {
						compatObjects(t, d, enc, want)
					}
				})
			}
		}
	}
}

// compatObjects checks that Manifests reads a SOPS YAML file as the plain document
// want, and that Objects refuses it decoded (its MAC needs the file's order).
func compatObjects(t *testing.T, d *Decryptor, enc, want []byte) {
	t.Helper()
	g := NewWithT(t)
	out, err := d.Manifests("m.yaml", enc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(string(want)))

	err = d.Objects([]*unstructured.Unstructured{object(t, enc)}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("a SOPS document is only decrypted from its file")))
}

// A file whose data key is split across key groups (Shamir): any threshold of groups
// decrypts it, fewer do not.
func TestKeyGroups(t *testing.T) {
	id1, age1 := ageKey(t)
	e2, pgp2 := pgpKey(t)
	id3, age3 := ageKey(t)
	opts := sopsenc.Options{Threshold: 2, EncryptedRegex: "^(data|stringData)$", Groups: []sopsenc.Options{
		{Age: []string{id1.Recipient().String()}},
		{PGP: []*openpgp.Entity{e2}},
		{Age: []string{id3.Recipient().String()}},
	}}
	enc, err := sopsenc.Encrypt("s.yaml", []byte(secretYAML), opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sopsenc.Plain("s.yaml", []byte(secretYAML))
	if err != nil {
		t.Fatal(err)
	}
	for name, keys := range map[string]map[string][]byte{
		"groups 1 and 2": {"a.agekey": age1, "b.asc": pgp2},
		"groups 2 and 3": {"b.asc": pgp2, "c.agekey": age3},
		"all groups":     {"a.agekey": age1, "b.asc": pgp2, "c.agekey": age3},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decryptor(t, keys).File("s.yaml", enc)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(string(got)).To(Equal(string(want)))
		})
	}
	_, err = decryptor(t, map[string][]byte{"a.agekey": age1}).File("s.yaml", enc)
	noSecret(t, err)
	g := NewWithT(t)
	g.Expect(err.Error()).To(ContainSubstring("2 of 3 key groups needed, 1 decrypted"))
	g.Expect(err.Error()).To(ContainSubstring("pgp:" + fingerprint(e2)))
}

// tamperMarkers locate, per file of compatDocs, an encrypted value and the MAC (each
// followed by "AES256_GCM,data:").
var tamperMarkers = map[string][2]string{
	"doc.yaml": {`password: ENC\[`, `mac: ENC\[`},
	"doc.json": {`"password": "ENC\[`, `"mac": "ENC\[`},
	"doc.env":  {`PASSWORD=ENC\[`, `sops_mac=ENC\[`},
	"doc.ini":  {`password +\= ENC\[`, `mac +\= ENC\[`},
	"doc.bin":  {`"data": "ENC\[`, `"mac": "ENC\[`},
}

// Every format: a changed ciphertext, a changed MAC and a wrong key fail with a message
// that names the file and never holds the value.
func TestTamperedEveryFormat(t *testing.T) {
	id, ageData := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": ageData})
	_, strangerData := ageKey(t)
	stranger := decryptor(t, map[string][]byte{"s.agekey": strangerData})
	for name, plain := range compatDocs {
		enc, err := sopsenc.Encrypt(name, []byte(plain), sopsenc.Options{Age: []string{id.Recipient().String()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			value, mac := tamperMarkers[name][0], tamperMarkers[name][1]
			for what, marker := range map[string]string{"value": value, "mac": mac} {
				loc := regexp.MustCompile(marker).FindIndex(enc)
				g.Expect(loc).NotTo(BeNil(), marker)
				bad := bytes.Clone(enc)
				i := loc[1] + len("AES256_GCM,data:")
				bad[i] = map[bool]byte{true: 'B', false: 'A'}[bad[i] == 'A']
				_, err := d.File(name, bad)
				noSecret(t, err)
				g.Expect(err.Error()).To(ContainSubstring(name), what)
				g.Expect(err.Error()).To(ContainSubstring("tampered"), what)
			}
			_, err := stranger.File(name, enc)
			noSecret(t, err)
			g.Expect(err.Error()).To(ContainSubstring("age:" + id.Recipient().String()))
		})
	}
}

// A document that also lists cloud master keys (KMS, GCP KMS, Azure Key Vault, Vault)
// decrypts with its age key, no cloud service asked; when no key decrypts, the error
// names every master key as SOPS does.
func TestCloudMasterKeysListed(t *testing.T) {
	g := NewWithT(t)
	id, ageData := ageKey(t)
	enc, err := sopsenc.Encrypt("s.yaml", []byte(secretYAML), sopsenc.Options{Age: []string{id.Recipient().String()}, EncryptedRegex: "^(data|stringData)$"})
	g.Expect(err).NotTo(HaveOccurred())
	cloud := `    kms:
        - arn: arn:aws:kms:eu-west-1:111122223333:key/k1
          role: arn:aws:iam::111122223333:role/r
          context: {team: a, env: prod}
          created_at: "2024-01-02T03:04:05Z"
          enc: AQICAHh
          aws_profile: ""
    gcp_kms:
        - resource_id: projects/p/locations/global/keyRings/r/cryptoKeys/k
          created_at: "2024-01-02T03:04:05Z"
          enc: CiQA
    azure_kv:
        - vault_url: https://v.vault.azure.net
          name: k
          version: "1"
          created_at: "2024-01-02T03:04:05Z"
          enc: abc
    hc_vault:
        - vault_address: https://vault:8200
          engine_path: sops
          key_name: k
          created_at: "2024-01-02T03:04:05Z"
          enc: vault:v1:x
`
	doc := bytes.Replace(enc, []byte("\nsops:\n"), []byte("\nsops:\n"+cloud), 1)
	g.Expect(doc).NotTo(Equal(enc))

	plain, err := decryptor(t, map[string][]byte{"a.agekey": ageData}).File("s.yaml", doc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(ContainSubstring("password: " + secretValue))

	_, other := ageKey(t)
	_, err = decryptor(t, map[string][]byte{"b.agekey": other}).File("s.yaml", doc)
	noSecret(t, err)
	for _, want := range []string{
		"kms:arn:aws:kms:eu-west-1:111122223333:key/k1+arn:aws:iam::111122223333:role/r|env:prod,team:a",
		"gcp_kms:projects/p/locations/global/keyRings/r/cryptoKeys/k",
		"azure_kv:https://v.vault.azure.net/keys/k/1",
		"hc_vault:https://vault:8200/v1/sops/keys/k",
		"age:" + id.Recipient().String(),
	} {
		g.Expect(err.Error()).To(ContainSubstring(want))
	}
}
