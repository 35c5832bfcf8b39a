package chartrepo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// BenchmarkPollNoChange is the cost of a HelmRepository poll that finds nothing new:
// requests and bytes downloaded per poll, for an https index of 200 charts × 10 versions
// (cold: the first poll) and for an OCI repository with 5 charts named by Applications.
func BenchmarkPollNoChange(b *testing.B) {
	ctx := context.Background()
	b.Run("https", func(b *testing.B) {
		repo := chartserver.NewRepo(b)
		archive := chartserver.Package(b, "c", map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n"})
		for i := range 200 {
			for v := range 10 {
				repo.Add(fmt.Sprintf("chart-%03d", i), fmt.Sprintf("1.%d.0", v), archive)
			}
		}
		store, err := chartrepo.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		src := chartrepo.Source{URL: repo.URL, CA: repo.CA}
		first, err := store.PollIndex(ctx, src, "")
		if err != nil {
			b.Fatal(err)
		}
		requests, bytes := repo.IndexRequests.Load(), repo.IndexBytes.Load()
		b.ResetTimer()
		for b.Loop() {
			if _, err := store.PollIndex(ctx, src, first.Digest); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(repo.IndexRequests.Load()-requests)/float64(b.N), "requests/poll")
		b.ReportMetric(float64(repo.IndexBytes.Load()-bytes)/float64(b.N), "bytes/poll")
		b.ReportMetric(float64(first.Bytes), "first-poll-bytes")
	})
	b.Run("oci", func(b *testing.B) {
		reg := chartserver.NewRegistry(b, "", "")
		var charts []string
		for i := range 5 {
			name := fmt.Sprintf("chart-%d", i)
			charts = append(charts, name)
			for v := range 3 {
				reg.Push(b, name, fmt.Sprintf("1.%d.0", v), chartserver.Package(b, name, map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n"}))
			}
		}
		store, err := chartrepo.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		src := chartrepo.Source{URL: reg.URL()}
		lists, blobs := reg.TagLists.Load(), reg.BlobDownloads.Load()
		b.ResetTimer()
		for b.Loop() {
			if _, err := store.PollTags(ctx, src, charts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(reg.TagLists.Load()-lists)/float64(b.N), "requests/poll")
		b.ReportMetric(float64(reg.BlobDownloads.Load()-blobs)/float64(b.N), "blobs/poll")
	})
}
