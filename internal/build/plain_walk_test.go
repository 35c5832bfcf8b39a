package build

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"

// A checkout removed while a build reads it (checkout GC) must not render the part that
// was read: os.RemoveAll removes a directory's files, then the directory. The hook plays
// that removal between the walk's steps.
func TestBuildPlainCheckoutRemovedDuringWalk(t *testing.T) {
	tests := []struct {
		name   string
		remove func(app, listed string) // runs after the walk lists a directory (app: the path)
		want   string
	}{
		{
			name: "directory emptied before it is listed, then removed",
			remove: func(app, listed string) {
				switch listed {
				case app:
					os.Remove(filepath.Join(app, "sub", "b.yaml"))
					os.Remove(filepath.Join(app, "sub", "c.yaml"))
				case filepath.Join(app, "sub"):
					os.Remove(listed)
				}
			},
			want: "app/sub vanished while the build read it",
		},
		{
			name: "file removed after it is listed",
			remove: func(app, listed string) {
				if listed == filepath.Join(app, "sub") {
					os.Remove(filepath.Join(listed, "c.yaml"))
				}
			},
			want: "reading app/sub/c.yaml: it vanished",
		},
		{
			name: "directory removed after it is listed",
			remove: func(app, listed string) {
				if listed == app {
					os.RemoveAll(filepath.Join(app, "sub"))
				}
			},
			want: "reading directory app/sub: it vanished",
		},
		{
			name: "symlinked directory removed after it is listed",
			remove: func(app, listed string) {
				if listed == app {
					os.Remove(filepath.Join(app, "link"))
				}
			},
			want: "reading app/link: it vanished",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, map[string]string{
				"app/a.yaml":     fmt.Sprintf(configMap, "a"),
				"app/sub/b.yaml": fmt.Sprintf(configMap, "b"),
				"app/sub/c.yaml": fmt.Sprintf(configMap, "c"),
				"app/z.yaml":     fmt.Sprintf(configMap, "z"),
				"other/d.yaml":   fmt.Sprintf(configMap, "d"),
			})
			symlink(t, root, "../other", "app/link")
			real, err := filepath.EvalSymlinks(root)
			g.Expect(err).NotTo(HaveOccurred())
			appDir := filepath.Join(real, "app")
			testHookListed = func(dir string) { tt.remove(appDir, dir) }
			defer func() { testHookListed = nil }()

			objs, err := Build(root, "app")
			g.Expect(err).To(MatchError(ErrCheckoutChanged), "rendered %v", ids(objs))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// A path with nothing to render says what it found and why nothing renders; one with
// nothing at all (or nothing recognisable) stays an empty render.
func TestBuildPlainSaysWhyNothingRenders(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // empty: an empty render
	}{
		{
			name:  "only jsonnet",
			files: map[string]string{"app/main.jsonnet": "{}", "app/lib/util.libsonnet": "{}", "app/README.md": "x"},
			want:  []string{"app holds no Kubernetes manifests (.yaml, .yml, .json files) but 2 jsonnet files (app/lib/util.libsonnet, app/main.jsonnet): jsonnet is not supported"},
		},
		{
			name: "helm chart",
			files: map[string]string{
				"app/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
				"app/values.yaml":               "replicas: 1\n",
				"app/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
			},
			want: []string{"app/Chart.yaml holds a Helm chart (Chart.yaml): a chart is rendered when it is the Application's path itself"},
		},
		{
			name:  "helm chart below the path",
			files: map[string]string{"app/cm.yaml": fmt.Sprintf(configMap, "a"), "app/charts/web/Chart.yaml": "apiVersion: v2\nname: web\n"},
			want:  []string{"app/charts/web/Chart.yaml holds a Helm chart", "set spec.path to app/charts/web"},
		},
		{
			name:  "kustomization without apiVersion below the path",
			files: map[string]string{"app/overlays/dev/kustomization.yaml": "resources: [../../base]\n", "app/base/cm.yaml": fmt.Sprintf(configMap, "a")},
			want:  []string{"app/overlays/dev/kustomization.yaml is a kustomize file", "point the path at its directory"},
		},
		{name: "empty directory", files: map[string]string{"app/.keep": ""}},
		{name: "only other files", files: map[string]string{"app/README.md": "# x", "app/notes.txt": "x"}},
		{name: "jsonnet beside manifests is ignored", files: map[string]string{"app/cm.yaml": fmt.Sprintf(configMap, "a"), "app/x.jsonnet": "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			objs, err := Build(root, "app")
			if len(tt.want) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred(), "rendered %v", ids(objs))
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}
