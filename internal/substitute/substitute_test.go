package substitute

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func cm(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: ns\ndata:\n" + data
}

func TestObjects(t *testing.T) {
	vars := Merge(map[string]string{"CLUSTER_NAME": "prod-eu", "REPLICAS": "3", "EMPTY": ""})
	for _, tc := range []struct {
		name    string
		in      string
		want    string // the object after substitution; "" = unchanged
		wantErr string
	}{
		{name: "plain", in: cm("  a: ${CLUSTER_NAME}\n  b: x-${CLUSTER_NAME}-y\n"), want: cm("  a: prod-eu\n  b: x-prod-eu-y\n")},
		{name: "default :=", in: cm("  a: ${REGION:=eu-west-1}\n  b: ${CLUSTER_NAME:=other}\n"), want: cm("  a: eu-west-1\n  b: prod-eu\n")},
		{name: "default :-", in: cm("  a: ${REGION:-eu-west-1}\n"), want: cm("  a: eu-west-1\n")},
		{name: "escape", in: cm("  a: $${CLUSTER_NAME}\n  b: $${NOT_SET}\n"), want: cm("  a: ${CLUSTER_NAME}\n  b: ${NOT_SET}\n")},
		// As in Flux: the substitution runs over the object re-emitted as YAML, where
		// the quotes of the source are gone, so an empty value becomes null.
		{name: "set but empty", in: cm("  a: \"${EMPTY}\"\n  b: x${EMPTY}\n"), want: cm("  a: null\n  b: x\n")},
		{name: "in names and keys", in: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-${CLUSTER_NAME}\n  labels:\n    cluster: ${CLUSTER_NAME}\n",
			want: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-prod-eu\n  labels:\n    cluster: prod-eu\n"},
		// A number substituted into an int field stays a number, as in Flux.
		{name: "number", in: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: ${REPLICAS}\n",
			want: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"},
		{name: "strict missing", in: cm("  a: ${NOT_SET}\n"), wantErr: `substituting variables in ConfigMap/ns/app: variable "NOT_SET" is not set and has no default`},
		{name: "disabled by gitsync", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n    gitsync.dev/substitute: disabled\ndata:\n  script: echo ${HOME} ${NOT_SET}\n"},
		{name: "disabled by Flux annotation", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  script: echo ${HOME}\n"},
		{name: "disabled by Flux label", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  script: echo ${HOME}\n"},
		{name: "other value does not disable", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n    gitsync.dev/substitute: enabled\ndata:\n  a: ${NOT_SET}\n",
			wantErr: `variable "NOT_SET" is not set`},
		{name: "no references", in: cm("  a: $HOME is not a reference\n"), want: cm("  a: $HOME is not a reference\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := obj(t, tc.in)
			err := Objects([]*unstructured.Unstructured{o}, vars)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			want := tc.want
			if want == "" {
				want = tc.in
			}
			g.Expect(o).To(Equal(obj(t, want)))
		})
	}
}

// Defaults apply without any variable, as with Flux's "always" option.
func TestObjectsWithoutVariables(t *testing.T) {
	g := NewWithT(t)
	o := obj(t, cm("  a: ${X:=fallback}\n"))
	g.Expect(Objects([]*unstructured.Unstructured{o}, nil)).To(Succeed())
	g.Expect(o).To(Equal(obj(t, cm("  a: fallback\n"))))
}

func TestInvalidName(t *testing.T) {
	err := Objects([]*unstructured.Unstructured{obj(t, cm("  a: b\n"))}, Merge(map[string]string{"BAD-NAME": "x"}))
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring(`variable name "BAD-NAME" is invalid`)))
}

func TestMergeAndSecretValues(t *testing.T) {
	g := NewWithT(t)
	v := Merge(
		map[string]string{"OVERRIDDEN": "inline", "INLINE": "i"},
		Source{Data: map[string]string{"FROM_CM": "cm", "SHADOWED": "cm-value"}},
		Source{Secret: true, Data: map[string]string{"TOKEN": "s3cr3t\n", "OVERRIDDEN": "secret-but-overridden", "SHADOWED": "secret-wins", "BLANK": ""}},
	)
	g.Expect(v.Values()).To(Equal(map[string]string{
		"OVERRIDDEN": "inline", "INLINE": "i", "FROM_CM": "cm", "SHADOWED": "secret-wins", "TOKEN": "s3cr3t", "BLANK": "",
	}))
	g.Expect(v.SecretValues()).To(Equal([]string{"s3cr3t", "secret-wins"}))

	// A later ConfigMap value makes the variable non-secret again.
	v = Merge(nil, Source{Secret: true, Data: map[string]string{"A": "x"}}, Source{Data: map[string]string{"A": "y"}})
	g.Expect(v.SecretValues()).To(BeEmpty())
}

// A secret value that breaks the YAML of an object is not echoed in the error.
func TestErrorsNeverQuoteSecretValues(t *testing.T) {
	g := NewWithT(t)
	const secret = "pa: ss\n  - [w0rd"
	v := Merge(nil, Source{Secret: true, Data: map[string]string{"PASSWORD": secret}})
	err := Objects([]*unstructured.Unstructured{obj(t, cm("  a: ${PASSWORD}\n"))}, v)
	g.Expect(err).To(HaveOccurred(), "the value breaks the object's YAML")
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/ns/app"))
	g.Expect(err.Error()).NotTo(ContainSubstring(strings.ReplaceAll(secret, "\n", "")))
	g.Expect(err.Error()).NotTo(ContainSubstring("w0rd"))
}

func TestManyObjects(t *testing.T) {
	g := NewWithT(t)
	objs := []*unstructured.Unstructured{obj(t, cm("  a: ${A}\n")), obj(t, cm("  a: ${B:=b}\n"))}
	g.Expect(Objects(objs, Merge(map[string]string{"A": "a"}))).To(Succeed())
	g.Expect(objs[0].Object["data"]).To(Equal(map[string]any{"a": "a"}))
	g.Expect(objs[1].Object["data"]).To(Equal(map[string]any{"a": "b"}))
}
