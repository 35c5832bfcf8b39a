package build

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// writeFiles writes files (slash paths relative to dir -> content) below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink creates link (slash path relative to dir) pointing at target.
func symlink(t *testing.T, dir, target, link string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(link))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// checkoutAndOutside returns a checkout root and, beside it, a directory outside it
// holding outside/secret.yaml (a valid object, so that only confinement stops it).
func checkoutAndOutside(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "checkout")
	outside = filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{
		"outside/secret.yaml":        secretYAML,
		"outside/kustomization.yaml": "resources: [secret.yaml]\n",
	})
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: host-secret
stringData:
  password: hunter2
`

// ids lists objects as "Kind/name" or "Kind/namespace/name".
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		id := o.GetKind() + "/"
		if ns := o.GetNamespace(); ns != "" {
			id += ns + "/"
		}
		out = append(out, id+o.GetName())
	}
	return out
}
