package helm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// Issue 34, item 3: a template that transforms a value read from a Secret before an
// error quotes it (fail, required, a YAML error of its output) does not leak it: each
// transform, rendered by the real template functions, is masked. Before, only the value
// as it was read was masked (b64enc, upper, quote… went through).
func TestRedactSecretsMasksTransformedValues(t *testing.T) {
	const (
		password = `Pa55"word\tail-7`
		encoded  = "ZGVjb2RlZC1zZWNyZXQtdmFsdWU=" // base64 of decoded-secret-value
	)
	values := map[string]any{"pw": password, "enc": encoded}
	secrets := []string{password, encoded}
	pipes := []string{
		".Values.pw",
		".Values.pw | b64enc",
		".Values.pw | b64enc | upper",
		".Values.pw | b32enc",
		".Values.pw | upper",
		".Values.pw | lower",
		".Values.pw | title",
		".Values.pw | swapcase",
		".Values.pw | quote",
		".Values.pw | squote",
		".Values.pw | toJson",
		`printf "%q" .Values.pw`,
		".Values.pw | urlquery",
		".Values.pw | sha256sum",
		".Values.pw | sha1sum",
		".Values.pw | sha512sum",
		".Values.pw | adler32sum",
		".Values.enc | b64dec",
		".Values.enc | b64dec | upper",
	}
	for _, pipe := range pipes {
		t.Run(pipe, func(t *testing.T) {
			g := NewWithT(t)
			// What the transform gives, from the template functions themselves.
			out := renderOne(t, "v: {{ "+pipe+" | b64enc }}\n", values)
			form, ok := strings.CutPrefix(strings.TrimSpace(out), "v: ")
			g.Expect(ok).To(BeTrue(), out)
			form = decodeOrFail(t, form)
			g.Expect(len(form)).To(BeNumerically(">=", minSecret))

			_, err := renderChartErr(t, "{{ fail ("+pipe+") }}\n", values)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(form), "the unredacted error quotes the transform")
			red := RedactSecrets(err, secrets...)
			g.Expect(red.Error()).NotTo(ContainSubstring(form))
			g.Expect(red.Error()).To(ContainSubstring("*****"))
			g.Expect(errors.Is(red, err)).To(BeTrue())
		})
	}
}

// renderChartErr renders a one-template chart with values.
func renderChartErr(t *testing.T, tpl string, values map[string]any) (*Rendered, error) {
	t.Helper()
	root := t.TempDir()
	writeChart(t, filepath.Join(root, "c"), "tenant", map[string]string{"templates/main.yaml": tpl})
	c, err := LoadDir(root, filepath.Join(root, "c"))
	if err != nil {
		t.Fatal(err)
	}
	return Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Values: []map[string]any{values}})
}

// renderOne renders tpl and returns its output.
func renderOne(t *testing.T, tpl string, values map[string]any) string {
	t.Helper()
	r, err := renderChartErr(t, tpl, values)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Templates) != 1 {
		t.Fatalf("rendered %d templates", len(r.Templates))
	}
	return string(r.Templates[0].Data)
}

func decodeOrFail(t *testing.T, b64 string) string {
	t.Helper()
	dec, ok := decodeBase64(b64)
	if !ok {
		t.Fatalf("%q is not base64", b64)
	}
	return dec
}
