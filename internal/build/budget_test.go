package build

import (
	"testing"

	. "github.com/onsi/gomega"
)

const okConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"

// A bomb past a file's first document is refused by the YAML budget, naming the file
// and the document, before anything expands it: in a plain directory, in a file
// kustomize reads and in a rendered template (Decode).
func TestBudgetRefusesBombsPastTheFirstDocument(t *testing.T) {
	second := okConfigMap + "---\n" + aliasBomb("bomb")
	third := okConfigMap + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n" + "---\n" + aliasBomb("bomb")
	tests := []struct {
		name  string
		build func(t *testing.T) error
		want  string
	}{
		{"plain, document 2", func(t *testing.T) error {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"app/cms.yaml": second})
			_, err := Build(root, "app")
			return err
		}, "app/cms.yaml: document 2 expands to more than 1048576 values through YAML aliases"},
		{"kustomize resource, document 3", func(t *testing.T) error {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"app/kustomization.yaml": "resources: [cms.yaml]\n", "app/cms.yaml": third})
			_, err := Build(root, "app")
			return err
		}, "app/cms.yaml: document 3 expands to more than 1048576 values through YAML aliases"},
		{"template output, document 2", func(t *testing.T) error {
			_, err := Decode([]File{{Name: "chart/templates/ok.yaml", Data: []byte(okConfigMap)}, {Name: "chart/templates/cms.yaml", Data: []byte(second)}})
			return err
		}, "chart/templates/cms.yaml: document 2 expands to more than 1048576 values through YAML aliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var err error
			alloc := allocated(func() { err = tt.build(t) })
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "bytes allocated by the build")
		})
	}
}
