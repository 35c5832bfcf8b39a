package build

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A YAML error names the line an editor shows, read plain or through kustomize: go-yaml's
// parser errors carry a 0-based line (its scanner's a 1-based one, kept as it is).
func TestYAMLErrorLineIsTheEditorsLine(t *testing.T) {
	for _, tt := range []struct {
		name, file, want string
	}{
		{"parser error: a flow sequence opened at line 7 never closes",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  bad: [unclosed\n  z: y\n",
			"yaml: line 7: did not find expected ',' or ']'"},
		{"parser error: line 5 is indented less than its mapping",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n labels: x\n",
			"yaml: line 5: did not find expected key"},
		{"scanner error: line 7 is indented more than its mapping",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n   bad: x\n",
			"yaml: line 7: mapping values are not allowed in this context"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"app/cm.yaml": tt.file})
			_, err := Build(root, "app")
			g.Expect(err).To(MatchError("parsing app/cm.yaml: " + tt.want))

			writeFiles(t, root, map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n"})
			_, err = Build(root, "app")
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix("kustomize build app: "))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}
