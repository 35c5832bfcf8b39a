package render

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// forgedSecret is an encrypted Secret of namespace team with its MAC deleted and its
// unencrypted metadata rewritten to another namespace and name, as someone without the
// key would forge it.
func forgedSecret(t *testing.T, recipient string) string {
	t.Helper()
	doc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: team\nstringData:\n  password: " + secretValue + "\n"
	enc := encrypt(t, "s.yaml", doc, recipient, "^(data|stringData)$")
	forged := regexp.MustCompile(`(?m)^\s*mac:.*\n`).ReplaceAllString(enc, "")
	if forged == enc {
		t.Fatal("no MAC to delete")
	}
	return strings.NewReplacer("namespace: team", "namespace: victim", "name: db", "name: exposed", "kind: Secret", "kind: ConfigMap").Replace(forged)
}

// A SOPS document without a MAC fails the render, whether the Application's path is a
// plain directory or a kustomization and whatever its file is called, saying why and
// quoting no value.
func TestRenderRefusesSOPSWithoutMAC(t *testing.T) {
	r, keys := ageKeys(t)
	forged := forgedSecret(t, r)
	for name, files := range map[string]map[string]string{
		"plain":              {"app/s.yaml": forged},
		"plain, json name":   {"app/s.json": forged},
		"kustomize":          {"app/s.yaml": forged, "app/kustomization.yaml": "resources: [s.yaml]\n"},
		"kustomize, txt":     {"app/s.txt": forged, "app/kustomization.yaml": "resources: [s.txt]\n"},
		"second of a stream": {"app/s.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" + forged},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			write(t, root, files)
			_, err := Render(context.Background(), app(decrypting), Source{Root: root, Path: "app"}, withKeys(t, keys))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(sopsfile.ErrNoMAC.Error()))
			noSecretIn(t, "the error", err)
		})
	}
}

// sopsBomb is a SOPS file whose second document is an alias bomb (9^7 values).
func sopsBomb(t *testing.T, recipient string) string {
	var b strings.Builder
	b.WriteString(encrypt(t, "s.yaml", secretDoc, recipient, "^(data|stringData)$"))
	b.WriteString("---\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// A SOPS file with an alias bomb past its first document fails the render with the YAML
// budget's error naming the file, before the SOPS reader expands it.
func TestRenderRefusesSOPSAliasBomb(t *testing.T) {
	r, keys := ageKeys(t)
	bomb := sopsBomb(t, r)
	for name, tc := range map[string]struct {
		files map[string]string
		file  string
	}{
		"plain":               {map[string]string{"app/s.yaml": bomb}, "app/s.yaml"},
		"plain, json name":    {map[string]string{"app/s.json": bomb}, "app/s.json"}, // read whole by the SOPS reader
		"kustomize":           {map[string]string{"app/s.yaml": bomb, "app/kustomization.yaml": "resources: [s.yaml]\n"}, "app/s.yaml"},
		"kustomize, env file": {map[string]string{"app/s.env": bomb, "app/kustomization.yaml": "secretGenerator:\n- name: s\n  envs: [s.env]\n"}, "app/s.env"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			write(t, root, tc.files)
			_, err := Render(context.Background(), app(decrypting), Source{Root: root, Path: "app"}, withKeys(t, keys))
			g.Expect(err).To(MatchError(yamlbudget.ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tc.file + ": document 2 expands to more than"))
		})
	}
}
