package sopsfile

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"
	sopsshamir "github.com/getsops/sops/v3/shamir"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

const secret = "hunter2-s3cr3t-value"

var docs = map[string]string{
	"s.yaml": `# head
apiVersion: v1
kind: Secret
metadata:
  name: db # inline
stringData:
  password: ` + secret + `
  multiline: |
    one
    two
spec:
  replicas: 3
  ratio: 0.5
  on: true
  none: null
  list: [a, 1, {b: c}]
  when: 2024-01-02T03:04:05Z
  token_unencrypted: clear
---
kind: ConfigMap
data:
  a: b
`,
	"s.json": `{"password": "` + secret + `", "n": {"i": 3, "f": 0.5, "b": false, "z": null, "l": [1, "x", {"y": "<&>"}]}, "token_unencrypted": "clear"}`,
}

// What Encrypt writes, SOPS' own packages decrypt (MAC checked) to what they decrypt
// from their own encryption of the same document.
func TestEncryptReadBySOPS(t *testing.T) {
	for name, plain := range docs {
		for _, regex := range []string{"", "^(data|stringData|password)$"} {
			t.Run(name+" "+regex, func(t *testing.T) {
				g := NewWithT(t)
				key := make([]byte, 32)
				_, _ = rand.Read(key)
				id, err := age.GenerateX25519Identity()
				g.Expect(err).NotTo(HaveOccurred())
				enc, err := Encrypt([]byte(plain), FormatForPath(name), Encryption{
					DataKey:        key,
					Keys:           []MasterKey{{Type: KeyAge, ID: id.Recipient().String(), Encrypted: "-----BEGIN AGE ENCRYPTED FILE-----\nx\n-----END AGE ENCRYPTED FILE-----\n"}},
					EncryptedRegex: regex,
				})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(enc)).NotTo(ContainSubstring(secret))
				g.Expect(string(enc)).To(ContainSubstring("clear"))

				got, err := sopsenc.DecryptWithDataKey(name, enc, key)
				g.Expect(err).NotTo(HaveOccurred())
				ref, refKey, err := sopsenc.EncryptKey(name, []byte(plain), sopsenc.Options{Age: []string{id.Recipient().String()}, EncryptedRegex: regex})
				g.Expect(err).NotTo(HaveOccurred())
				want, err := sopsenc.DecryptWithDataKey(name, ref, refKey)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(got)).To(Equal(string(want)))

				// And it reads back here, MAC checked in full.
				f, err := Load(enc, FormatForPath(name))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(f.Decrypt(key)).To(Succeed())
				out, err := Emit(f.Branches, f.Format)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(out)).To(Equal(string(want)))
			})
		}
	}
}

// Any threshold of SOPS' Shamir shares recombines to the key; fewer do not.
func TestCombineShares(t *testing.T) {
	g := NewWithT(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	shares, err := sopsshamir.Split(key, 5, 3)
	g.Expect(err).NotTo(HaveOccurred())
	for _, pick := range [][]int{{0, 1, 2}, {4, 2, 0}, {1, 3, 4}, {0, 1, 2, 3, 4}} {
		var parts [][]byte
		for _, i := range pick {
			parts = append(parts, shares[i])
		}
		got, err := CombineShares(parts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(key), "shares %v", pick)
	}
	got, err := CombineShares([][]byte{shares[0], shares[1]})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).NotTo(Equal(key))
	_, err = CombineShares([][]byte{shares[0], shares[0]})
	g.Expect(err).To(HaveOccurred())
}

// Load's errors describe the problem, never the document.
func TestLoadErrorsHoldNoValue(t *testing.T) {
	for name, tc := range map[string]struct {
		format Format
		data   string
	}{
		"yaml syntax":      {YAML, "a: [" + secret + "\n"},
		"yaml duplicate":   {YAML, "a: " + secret + "\na: b\n"},
		"yaml list":        {YAML, "- " + secret + "\n"},
		"json syntax":      {JSON, `{"a": "` + secret + `"`},
		"json array":       {JSON, `["` + secret + `"]`},
		"dotenv no equals": {Dotenv, secret + "\n"},
		"ini syntax":       {INI, "[" + secret + "\n"},
		"no metadata":      {YAML, "a: " + secret + "\n"},
		"bad metadata":     {YAML, "a: b\nsops:\n  lastmodified: " + secret + "\n"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]byte(tc.data), tc.format)
			g := NewWithT(t)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			if name == "no metadata" {
				g.Expect(errors.Is(err, ErrNoMetadata)).To(BeTrue())
			}
		})
	}
}

// Flattened metadata (dotenv, INI) rebuilds nested lists and mappings.
func TestUnflatten(t *testing.T) {
	g := NewWithT(t)
	m, err := unflatten([]Item{
		{Key: "key_groups__list_1__map_age__list_0__map_recipient", Value: "r2"},
		{Key: "key_groups__list_0__map_pgp__list_0__map_fp", Value: "F1"},
		{Key: "mac", Value: "M"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).To(Equal(map[string]any{
		"mac": "M",
		"key_groups": []any{
			map[string]any{"pgp": []any{map[string]any{"fp": "F1"}}},
			map[string]any{"age": []any{map[string]any{"recipient": "r2"}}},
		},
	}))
	_, err = unflatten([]Item{{Key: "l__list_1", Value: "x"}})
	g.Expect(err).To(HaveOccurred())
}

// A value in the clear where the rules say encrypted, or a ciphertext bound to another
// path, is refused.
func TestDecryptRefusesMovedValues(t *testing.T) {
	g := NewWithT(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	enc, err := Encrypt([]byte("a: "+secret+"\nb: other\n"), YAML, Encryption{DataKey: key, Keys: []MasterKey{{Type: KeyAge, ID: "r"}}})
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(string(enc), "\n")
	a, b := strings.TrimPrefix(lines[0], "a: "), strings.TrimPrefix(lines[1], "b: ")
	swapped := bytes.Replace(bytes.Replace(enc, []byte(a), []byte("@"), 1), []byte(b), []byte(a), 1)
	swapped = bytes.Replace(swapped, []byte("@"), []byte(b), 1)
	for _, doc := range [][]byte{swapped, bytes.Replace(enc, []byte(a), []byte("plain"), 1)} {
		f, err := Load(doc, YAML)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.Decrypt(key)).To(MatchError(ErrValue))
	}
}
