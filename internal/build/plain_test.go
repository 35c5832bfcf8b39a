package build

import (
	"errors"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestBuildPlainDirectory(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"apps/web/deploy.yaml": `# leading comment
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
---
---
apiVersion: v1
kind: Service
metadata:
  name: web
`,
		"apps/web/z/nested/cm.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n",
		"apps/a-list.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: sa-1
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: sa-2
`,
		"apps/role.json":            `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"}, "rules": []}`,
		"apps/README.md":            "not: yaml: at all: [",
		"apps/web/notes.txt":        "kind: nothing",
		"apps/.github/workflow.yml": "on: push\n",
		"apps/.yamllint.yaml":       "rules: {}\n",
		"apps/web/empty.yaml":       "",
		"other/ignored.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-under-path\n",
	})

	objs, err := Build(root, "apps")
	g.Expect(err).NotTo(HaveOccurred())
	// Sorted by path (a-list.yaml, role.json, web/deploy.yaml, web/z/nested/cm.yml),
	// then document order; lists flattened.
	g.Expect(ids(objs)).To(Equal([]string{
		"ServiceAccount/sa-1",
		"ServiceAccount/sa-2",
		"ClusterRole/reader",
		"Deployment/shop/web",
		"Service/web",
		"ConfigMap/deep",
	}))
	replicas, _, _ := unstructuredInt(objs[3].Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(2)))

	// The same from the checkout root: "./" and "/" name it.
	for _, p := range []string{"./", "/", ""} {
		all, err := Build(root, p)
		g.Expect(err).NotTo(HaveOccurred(), "path %q", p)
		g.Expect(ids(all)).To(ContainElement("ConfigMap/not-under-path"))
		g.Expect(all).To(HaveLen(7))
	}
}

func TestBuildPlainErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "broken yaml names file and line",
			files: map[string]string{
				"ok.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n",
				"sub/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b: c\n",
			},
			want: []string{"sub/bad.yaml", "line 9"},
		},
		{
			name:  "broken json",
			files: map[string]string{"x.json": `{"apiVersion": "v1",`},
			want:  []string{"x.json"},
		},
		{
			name:  "object without kind",
			files: map[string]string{"a/nokind.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"},
			want:  []string{"a/nokind.yaml", "document 1 (line 1)", "no kind"},
		},
		{
			name:  "object without apiVersion",
			files: map[string]string{"noapi.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n"},
			want:  []string{"noapi.yaml", "no apiVersion"},
		},
		{
			name:  "object without name in second document",
			files: map[string]string{"noname.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  generateName: y-\n"},
			want:  []string{"noname.yaml", "document 2 (line 6)", "Secret has no metadata.name"},
		},
		{
			name:  "list item without kind",
			files: map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {name: x}\n"},
			want:  []string{"list.yaml", "List item 0", "no kind"},
		},
		{
			name:  "document that is not an object",
			files: map[string]string{"scalar.yaml": "just a string\n"},
			want:  []string{"scalar.yaml", "expected a Kubernetes object"},
		},
		{
			name:  "duplicate key",
			files: map[string]string{"dup.yaml": "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: x}\n"},
			want:  []string{"dup.yaml", "line 3", `"kind" already defined`},
		},
		{
			name: "same object twice",
			files: map[string]string{
				"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: n}\n",
				"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: n}\n",
			},
			want: []string{"b.yaml", "ConfigMap n/x is also defined in a.yaml"},
		},
		{
			name:  "kustomization below a plain path",
			files: map[string]string{"sub/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\nresources: []\n"},
			want:  []string{"sub/kustomization.yaml", "kustomize file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := Build(root, ".")
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(root), "errors name files relative to the checkout")
		})
	}
}

func TestBuildPathErrors(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})

	_, err := Build(root, "apps/missing")
	g.Expect(err).To(MatchError(ErrPathNotFound))
	g.Expect(err.Error()).To(ContainSubstring(`"apps/missing"`))

	_, err = Build(root, "apps/cm.yaml")
	g.Expect(err).To(MatchError(ContainSubstring(`"apps/cm.yaml" is not a directory`)))

	_, err = Build(filepath.Join(root, "nope"), ".")
	g.Expect(err).To(MatchError(ContainSubstring("checkout root")))

	objs, err := Build(root, "apps/") // trailing slash
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
}

func TestBuildPlainEmptyDirectory(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/README.md": "# nothing\n", "apps/empty.yaml": "---\n# only a comment\n"})
	objs, err := Build(root, "apps")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(BeEmpty())
}

func TestBuildSameFromAnyWorkingDirectory(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"plain/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"kust/kustomization.yaml":     "resources: [cm.yaml]\nnamePrefix: p-\n",
		"kust/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"elsewhere/kust/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrong}\n",
		"elsewhere/plain/other.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrong}\n",
		"elsewhere/kustomization.yml": "resources: [kust/cm.yaml]\n",
	})
	var want [][]string
	for _, p := range []string{"plain", "kust"} {
		objs, err := Build(root, p)
		g.Expect(err).NotTo(HaveOccurred())
		want = append(want, ids(objs))
	}
	// A working directory that holds the same relative paths must change nothing.
	t.Chdir(filepath.Join(root, "elsewhere"))
	for i, p := range []string{"plain", "kust"} {
		objs, err := Build(root, p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ids(objs)).To(Equal(want[i]))
	}
	g.Expect(want).To(Equal([][]string{{"ConfigMap/x"}, {"ConfigMap/p-x"}}))
}

// unstructuredInt reads an int64 field without the type coercion of the helpers in
// apimachinery, to check what the decoder produced.
func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, errors.New("not a map")
		}
		cur = m[f]
	}
	v, ok := cur.(int64)
	return v, ok, nil
}

func TestBuildRootThroughSymlink(t *testing.T) {
	g := NewWithT(t)
	base := t.TempDir()
	real := filepath.Join(base, "checkouts", "abc123")
	writeFiles(t, real, map[string]string{
		"plain/cm.yaml":           configMapYAML,
		"kust/kustomization.yaml": "resources: [../plain/cm.yaml]\n",
	})
	symlink(t, base, real, "current")
	for _, p := range []string{"plain", "kust"} {
		objs, err := Build(filepath.Join(base, "current"), p)
		g.Expect(err).NotTo(HaveOccurred(), p)
		g.Expect(ids(objs)).To(Equal([]string{"ConfigMap/inside"}))
	}
}
