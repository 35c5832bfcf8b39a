package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// BenchmarkFetch measures Fetch against the in-process HTTP server on a
// repository of 1,000 files built in 50 commits, and reports how many ref
// listings and fetches the server saw per operation.
func BenchmarkFetch(b *testing.B) {
	srv := gittest.NewServer(b, gittest.Options{})
	repo := srv.CreateRepo("bench")
	const commits, filesPerCommit = 50, 20
	for c := range commits {
		repo.CommitFunc("main", fmt.Sprintf("commit %d", c), func(wt string) {
			dir := filepath.Join(wt, fmt.Sprintf("app%02d", c))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for i := range filesPerCommit {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cm%02d.yaml", i)), benchManifest(c, i, 0), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	url := srv.HTTPURL("bench")
	ctx := context.Background()

	reportServer := func(b *testing.B) {
		c := srv.Counts("bench")
		b.ReportMetric(float64(c.RefListings)/float64(b.N), "listings/op")
		b.ReportMetric(float64(c.Fetches)/float64(b.N), "fetches/op")
	}

	b.Run("FirstClone", func(b *testing.B) {
		b.ReportAllocs()
		srv.ResetCounts()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			storage, err := os.MkdirTemp(b.TempDir(), "storage-")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			f, err := NewFetcher(storage)
			if err != nil {
				b.Fatal(err)
			}
			a, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}})
			if err != nil {
				b.Fatal(err)
			}
			if !a.Fetched {
				b.Fatal("first clone did not fetch")
			}
			b.StopTimer()
			if err := os.RemoveAll(storage); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.StopTimer()
		reportServer(b)
	})

	b.Run("NoChangePoll", func(b *testing.B) {
		b.ReportAllocs()
		f := benchFetcher(b)
		current, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}})
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetCounts()
		b.ResetTimer()
		for range b.N {
			a, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}, Current: current})
			if err != nil {
				b.Fatal(err)
			}
			if a.Fetched {
				b.Fatal("poll without a new commit fetched")
			}
		}
		b.StopTimer()
		reportServer(b)
	})

	b.Run("IncrementalFetch", func(b *testing.B) {
		b.ReportAllocs()
		f := benchFetcher(b)
		current, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}})
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetCounts()
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			repo.CommitFunc("main", fmt.Sprintf("change %d of %s", i, b.Name()), func(wt string) {
				name := filepath.Join(wt, fmt.Sprintf("app%02d", i%commits), fmt.Sprintf("cm%02d.yaml", i%filesPerCommit))
				if err := os.WriteFile(name, benchManifest(i%commits, i%filesPerCommit, b.N*1000+i+1), 0o644); err != nil {
					b.Fatal(err)
				}
			})
			b.StartTimer()
			a, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}, Current: current})
			if err != nil {
				b.Fatal(err)
			}
			if !a.Fetched || a.Commit == current.Commit {
				b.Fatal("new commit was not fetched")
			}
			current = a
		}
		b.StopTimer()
		reportServer(b)
	})
}

func benchFetcher(b *testing.B) *Fetcher {
	b.Helper()
	f, err := NewFetcher(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// benchManifest is a ConfigMap of about 400 bytes.
func benchManifest(app, file, generation int) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: ConfigMap
metadata:
  name: app%02d-cm%02d
  namespace: bench
  labels:
    app.kubernetes.io/name: app%02d
    app.kubernetes.io/part-of: gitsync-bench
data:
  generation: "%d"
  config.yaml: |
    replicas: 3
    image: registry.example.com/app%02d:1.0.%d
    resources:
      cpu: 100m
      memory: 128Mi
`, app, file, app, generation, app, generation)
}
