package build

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeNearLimit writes, below dir/app, 4 files of ConfigMaps with 1,000 keys each,
// just under the build's value limit: 120 per file (960,000 YAML nodes, keys and
// values) for a plain build, 30 (240,000) for kustomize, with a kustomization listing them.
func writeNearLimit(b *testing.B, dir string, kustomize bool) {
	perFile := 120
	if kustomize {
		perFile = 30
	}
	b.Helper()
	var names []string
	for f := range 4 {
		var s strings.Builder
		for i := range perFile {
			fmt.Fprintf(&s, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d-%d}\ndata:\n", f, i)
			for k := range 1000 {
				fmt.Fprintf(&s, "  k%d: v%d\n", k, k)
			}
		}
		name := fmt.Sprintf("f%d.yaml", f)
		names = append(names, name)
		writeBenchFile(b, filepath.Join(dir, "app", name), s.String())
	}
	if kustomize {
		writeBenchFile(b, filepath.Join(dir, "app", "kustomization.yaml"), "resources: ["+strings.Join(names, ", ")+"]\n")
	}
}

func writeBenchFile(b *testing.B, p, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

// peakHeap runs f and returns the highest heap in use sampled (every millisecond)
// while it ran, above the heap in use before, in MiB.
func peakHeap(f func()) float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			if s.HeapInuse > peak.Load() {
				peak.Store(s.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return float64(peak.Load()-min(base, peak.Load())) / (1 << 20)
}

func benchmarkNearLimit(b *testing.B, kustomize bool) {
	dir := b.TempDir()
	writeNearLimit(b, dir, kustomize)
	for b.Loop() {
		var objs int
		heap := peakHeap(func() {
			o, err := Build(dir, "app")
			if err != nil {
				b.Fatal(err)
			}
			objs = len(o)
		})
		b.ReportMetric(heap, "peak-heap-MiB")
		b.ReportMetric(float64(objs), "objects")
	}
}

// The heap a build at the value limit takes (the operator's limit is 512 MiB).
func BenchmarkBuildPlainNearValueLimit(b *testing.B)     { benchmarkNearLimit(b, false) }
func BenchmarkBuildKustomizeNearValueLimit(b *testing.B) { benchmarkNearLimit(b, true) }

// The heap refusing the alias bomb and a 50 MiB file takes.
func BenchmarkBuildRefusals(b *testing.B) {
	dir := b.TempDir()
	writeBenchFile(b, filepath.Join(dir, "bomb", "kustomization.yaml"), "resources: [bomb.yaml]\n")
	writeBenchFile(b, filepath.Join(dir, "bomb", "bomb.yaml"), aliasBomb("bomb"))
	writeBenchFile(b, filepath.Join(dir, "big", "big.yaml"), "")
	if err := os.Truncate(filepath.Join(dir, "big", "big.yaml"), 50<<20); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, path := range []string{"bomb", "big"} {
			heap := peakHeap(func() {
				if _, err := Build(dir, path); err == nil {
					b.Fatal("built")
				}
			})
			b.ReportMetric(heap, path+"-peak-heap-MiB")
		}
	}
}
