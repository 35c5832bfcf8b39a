package decrypt

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// withoutMAC removes the MAC entry of an encrypted YAML or dotenv file.
func withoutMAC(t *testing.T, enc string) string {
	t.Helper()
	out := regexp.MustCompile(`(?m)^\s*(mac|sops_mac)\s*[:=].*\n`).ReplaceAllString(enc, "")
	if out == enc {
		t.Fatalf("no MAC removed from\n%s", enc)
	}
	return out
}

// forge makes of a Secret someone else's: another kind, namespace and name, written in
// the clear next to the ciphertexts of the original.
func forge(doc string) string {
	return strings.NewReplacer("kind: Secret", "kind: ConfigMap", "namespace: prod", "namespace: victim", "name: db", "name: exposed").Replace(doc)
}

// A document with SOPS metadata and no MAC (deleted, or empty) is refused by every
// entry point, before any value is decrypted, saying so and quoting no value: without
// the MAC, anyone could change its unencrypted kind, namespace or metadata.
func TestNoMACIsRefused(t *testing.T) {
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	enc := string(encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)))
	noMAC := forge(withoutMAC(t, enc))
	emptyMAC := forge(regexp.MustCompile(`(?m)^(\s*mac:).*$`).ReplaceAllString(enc, `$1 ""`))
	for name, doc := range map[string]string{"deleted": noMAC, "empty": emptyMAC} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := d.File("apps/secret.yaml", []byte(doc))
			noSecret(t, err)
			g.Expect(err).To(MatchError(sopsfile.ErrNoMAC))
			g.Expect(err.Error()).To(ContainSubstring("decrypting apps/secret.yaml: the SOPS metadata has no MAC"))

			_, err = d.Manifests("apps/all.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"+doc))
			noSecret(t, err)
			g.Expect(err).To(MatchError(sopsfile.ErrNoMAC))
			g.Expect(err.Error()).To(ContainSubstring("apps/all.yaml: document 2: the SOPS metadata has no MAC"))

			err = d.Objects([]*unstructured.Unstructured{object(t, []byte(doc))}, func(int) string { return "apps/all.yaml" })
			noSecret(t, err)
			g.Expect(err).To(MatchError(sopsfile.ErrNoMAC))
			g.Expect(err.Error()).To(ContainSubstring("apps/all.yaml: ConfigMap/victim/exposed: the SOPS metadata has no MAC"))
		})
	}
}

// Without the MAC where SOPS writes it, a JSON or dotenv file is still read as SOPS (by
// its name) and refused, alone or as a Secret's entry, rather than passed on as it is.
func TestNoMACOtherFormats(t *testing.T) {
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	jsonDoc := string(encrypt(t, sopsfile.JSON, []byte(`{"password": "`+secretValue+`", "user": "app"}`), "", ageMaster(t, id)))
	jsonNoMAC := regexp.MustCompile(`,\s*"mac":\s*"[^"]*"`).ReplaceAllString(jsonDoc, "")
	env := string(encrypt(t, sopsfile.Dotenv, []byte("TOKEN="+secretValue+"\n"), "", ageMaster(t, id)))
	envNoMAC := withoutMAC(t, env)
	for name, tc := range map[string]struct{ file, doc string }{
		"json":   {"creds.json", jsonNoMAC},
		"dotenv": {"app.env", envNoMAC},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.doc).NotTo(ContainSubstring(`mac`))
			_, err := d.File(tc.file, []byte(tc.doc))
			noSecret(t, err)
			g.Expect(err).To(MatchError(sopsfile.ErrNoMAC))

			generated := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "gen"},
				"data": map[string]any{tc.file: base64.StdEncoding.EncodeToString([]byte(tc.doc))},
			}}
			err = d.Objects([]*unstructured.Unstructured{generated}, nil)
			noSecret(t, err)
			g.Expect(err).To(MatchError(sopsfile.ErrNoMAC))
		})
	}
}

// The MAC covers the whole document as SOPS computes it: with the MAC kept, a changed
// kind, namespace or name (all unencrypted) fails, from a file or from a stream; a
// decoded object, which lost the order the MAC needs, is refused whatever it holds.
func TestMACCoversTheWholeDocument(t *testing.T) {
	g := NewWithT(t)
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	enc := string(encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)))
	for _, change := range [][2]string{{"kind: Secret", "kind: ConfigMap"}, {"namespace: prod", "namespace: victim"}, {"name: db", "name: exposed"}, {"type: Opaque", "type: kubernetes.io/tls"}} {
		forged := strings.Replace(enc, change[0], change[1], 1)
		g.Expect(forged).NotTo(Equal(enc))
		_, err := d.File("s.yaml", []byte(forged))
		noSecret(t, err)
		g.Expect(err.Error()).To(ContainSubstring("the MAC does not match the values"), change[1])
		_, err = d.Manifests("s.yaml", []byte(forged))
		noSecret(t, err)
		g.Expect(err.Error()).To(ContainSubstring("the MAC does not match the values"), change[1])
		err = d.Objects([]*unstructured.Unstructured{object(t, []byte(forged))}, nil)
		noSecret(t, err)
		g.Expect(err.Error()).To(ContainSubstring("a SOPS document is only decrypted from its file"), change[1])
	}
	// Dropping a value is a change too.
	dropped := regexp.MustCompile(`(?m)^\s*port: ENC.*\n`).ReplaceAllString(enc, "")
	_, err := d.Manifests("s.yaml", []byte(dropped))
	noSecret(t, err)
	g.Expect(err.Error()).To(ContainSubstring("the MAC does not match the values"))
}
