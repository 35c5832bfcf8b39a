package helm

import (
	"context"
	"path/filepath"
	"testing"
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
	if n := len(renderedObjects(b, r)); n != 100 {
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
