package build

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// renderYAML is the golden form of a build: one YAML document per object.
func renderYAML(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	return buf.Bytes()
}

func TestBuildKustomizeOverlayGolden(t *testing.T) {
	tests := []struct {
		path   string
		golden string
	}{
		{path: "overlays/dev", golden: "overlays-dev.yaml"},
		{path: "base", golden: "base.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := Build("testdata/kustomize", tt.path)
			g.Expect(err).NotTo(HaveOccurred())
			got := renderYAML(t, objs)

			golden := filepath.Join("testdata", "golden", tt.golden)
			if *update {
				g.Expect(os.MkdirAll(filepath.Dir(golden), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(golden, got, 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(golden)
			g.Expect(err).NotTo(HaveOccurred(), "run go test ./internal/build/ -run Golden -update to create it")
			g.Expect(string(got)).To(Equal(string(want)))
		})
	}
}

func TestBuildKustomizeOverlayContent(t *testing.T) {
	g := NewWithT(t)
	objs, err := Build("testdata/kustomize", "overlays/dev")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(3))
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = o
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("env", "dev"))
	}
	for _, kind := range []string{"Deployment", "Service"} { // the base's resources
		g.Expect(byKind[kind].GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "demo"))
	}
	dep := byKind["Deployment"]
	g.Expect(dep.GetName()).To(Equal("dev-demo"))
	replicas, ok, _ := unstructuredInt(dep.Object, "spec", "replicas")
	g.Expect(ok).To(BeTrue(), "replicas must be an int64")
	g.Expect(replicas).To(Equal(int64(3)))
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "ghcr.io/example/demo:1.1.0-dev"))
	g.Expect(containers[0]).To(HaveKey("resources"))
	// A quoted date in the source stays the same string.
	g.Expect(containers[0].(map[string]any)["env"]).To(ContainElement(HaveKeyWithValue("value", "2024-01-01")))
	g.Expect(byKind["ConfigMap"].GetName()).To(HavePrefix("dev-demo-config-"))
	g.Expect(byKind["Service"].GetName()).To(Equal("dev-demo"))

	// The objects are plain JSON values: deep copies work.
	g.Expect(dep.DeepCopy().Object).To(Equal(dep.Object))
}

func TestBuildKustomizeFileNames(t *testing.T) {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, map[string]string{
				"app/" + name:    "resources: [cm.yaml]\nnamespace: team\n",
				"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
				"app/stray.yaml": "this file is not listed, so it is not read: [",
			})
			objs, err := Build(root, "app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ids(objs)).To(Equal([]string{"ConfigMap/team/x"}))
		})
	}
}

func TestBuildKustomizeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "broken resource yaml",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [bad.yaml]\n",
				"app/bad.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a: b\n",
			},
			want: []string{"kustomize build app", "bad.yaml"},
		},
		{
			name:  "broken kustomization",
			files: map[string]string{"app/kustomization.yaml": "resources: [\n"},
			want:  []string{"app/kustomization.yaml", "line"},
		},
		{
			name:  "missing resource",
			files: map[string]string{"app/kustomization.yaml": "resources: [nope.yaml]\n"},
			want:  []string{"kustomize build app", "nope.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := Build(root, "app")
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(root), "errors name files relative to the checkout")
		})
	}
}

// Builds run concurrently in the controller; kustomize keeps package state, which
// the race detector watches here.
func TestBuildConcurrent(t *testing.T) {
	g := NewWithT(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			path := "overlays/dev"
			if i%2 == 1 {
				path = "base"
			}
			_, errs[i] = Build("testdata/kustomize", path)
		})
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}
