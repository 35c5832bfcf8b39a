package helm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// BenchmarkRenderHundred renders testdata/hundred (100 objects: 80 ConfigMaps, 10
// Services, 10 Deployments), loaded once, as a sync renders a chart in Git:
// go test -run '^$' -bench RenderHundred -benchmem -count 3 ./internal/helm/
func BenchmarkRenderHundred(b *testing.B) {
	root := filepath.Join("testdata")
	c, err := LoadDir(root, filepath.Join(root, "hundred"))
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{ReleaseName: "bench", Namespace: "team-a", Values: []map[string]any{{"replicaCount": 2}}}
	r, err := Render(context.Background(), c, opts)
	if err != nil {
		b.Fatal(err)
	}
	if n := countObjects(b, r); n != 100 {
		b.Fatalf("the chart rendered %d objects, want 100", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(context.Background(), c, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadAndRenderHundred adds loading the chart from its directory to each render.
func BenchmarkLoadAndRenderHundred(b *testing.B) {
	root := filepath.Join("testdata")
	opts := Options{ReleaseName: "bench", Namespace: "team-a"}
	b.ReportAllocs()
	for b.Loop() {
		c, err := LoadDir(root, filepath.Join(root, "hundred"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Render(context.Background(), c, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// countObjects counts the non-empty YAML documents of the rendered templates.
func countObjects(b *testing.B, r *Rendered) int {
	b.Helper()
	n := 0
	for _, m := range r.Templates {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m.Data), 4096)
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatalf("%s: %v", m.Name, err)
			}
			if obj != nil {
				n++
			}
		}
	}
	return n
}
