package build

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// A Secret with a bad YAML tag is refused without its value in the error (nor anywhere
// in the error's chain), keeping the file, the line and the kind of error.
func TestBuildRedactsValuesFromParserErrors(t *testing.T) {
	const value = "hunter2-do-not-print"
	const secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: !!int " + value + "\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "plain",
			files: map[string]string{"app/secret.yaml": secret},
			want:  []string{"app/secret.yaml", "line 6", "cannot decode !!str (value redacted) as a !!int"},
		},
		{
			name:  "plain, short value",
			files: map[string]string{"app/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: !!bool hunt}\n"},
			want:  []string{"app/secret.yaml", "line 4", "cannot decode !!str (value redacted) as a !!bool"},
		},
		{
			name:  "kustomize resource",
			files: map[string]string{"app/kustomization.yaml": "resources: [secret.yaml]\n", "app/secret.yaml": secret},
			want:  []string{"app/secret.yaml: line 6: the value tagged !!int is not a valid !!int (value redacted)"},
		},
		{
			name: "kustomize inline patch",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData: {password: " + value + "\n",
				"app/cm.yaml":            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
			},
			want: []string{"kustomize build app", "(value redacted)"},
		},
		{
			name: "kustomization",
			files: map[string]string{
				"app/kustomization.yaml": "secretGenerator:\n- name: s\n  literals: !!int " + value + "\n",
			},
			want: []string{"app/kustomization.yaml", "(value redacted)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := Build(root, "app")
			g.Expect(err).To(HaveOccurred())
			t.Log(err)
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				g.Expect(e.Error()).NotTo(ContainSubstring(value[:7]))
			}
		})
	}
}

func TestRedact(t *testing.T) {
	g := NewWithT(t)
	g.Expect(redact("yaml: line 3: cannot unmarshal !!str `secret` into int")).To(Equal("yaml: line 3: cannot unmarshal !!str (value redacted) into int"))
	g.Expect(redact(`unable to parse SM or JSON patch from [patch: "a: \"b\"\nc"]`)).To(Equal("unable to parse SM or JSON patch from [patch: (value redacted)]"))
	g.Expect(redact("reading a.yaml: no such file")).To(Equal("reading a.yaml: no such file"))

	orig := &OutsideError{Path: "x"}
	redacted := redactError(errors.Join(orig, errors.New("`value`")))
	g.Expect(redacted.Error()).NotTo(ContainSubstring("`value`"))
	g.Expect(redacted).To(MatchError(ErrOutsideCheckout), "errors.Is still sees the package's errors")
	var oe *OutsideError
	g.Expect(errors.As(redacted, &oe)).To(BeTrue())
	g.Expect(errors.Unwrap(redacted)).To(BeNil())
	plain := errors.New("nothing quoted")
	g.Expect(redactError(plain)).To(BeIdenticalTo(plain))
}
