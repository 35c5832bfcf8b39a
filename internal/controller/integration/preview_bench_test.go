package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// BenchmarkPreview20Apps: a signed pull request event → the comment posted, for a
// repository feeding 20 Applications (each a Deployment-free ConfigMap pair, one value
// changed by the pull request), in process against envtest and the in-process Git
// server and forge emulator. Reports the median of 5 previews (each a new push) and the
// runner's requests to the API server per preview, by verb: every write is a dry-run.
func BenchmarkPreview20Apps(b *testing.B) {
	const apps = 20
	files := func(value string) map[string]string {
		out := map[string]string{}
		for i := range apps {
			out[fmt.Sprintf("apps/a%02d/cm.yaml", i)] = configMapYAML(fmt.Sprintf("a%02d", i), value)
			out[fmt.Sprintf("apps/a%02d/other.yaml", i)] = configMapYAML(fmt.Sprintf("a%02d-other", i), "fixed")
		}
		return out
	}
	f, sha := newPreviewFixture(b, files("0"))
	for i := range apps {
		f.app(fmt.Sprintf("a%02d", i), func(a *gitsyncv1.Application) { a.Spec.Path = fmt.Sprintf("apps/a%02d", i) })
	}
	for i := range apps {
		f.waitApplied(fmt.Sprintf("a%02d", i), sha)
	}
	b.ResetTimer()
	for range b.N {
		var took []time.Duration
		var counts map[string]int
		for run := range 5 {
			head := f.repo.Commit("feature", "change", files(fmt.Sprint(run+1)))
			before := f.api.Snapshot()
			start := time.Now()
			f.openPull("synchronize", 1, "feature", head, "acme/app")
			took = append(took, time.Since(start))
			counts = f.api.Since(before)
			if st := f.statusOf(head); st == nil || st.State != "success" {
				b.Fatalf("preview of %s: %+v", head, st)
			}
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[2].Milliseconds()), "ms/preview-median")
		total := 0
		for verb, n := range counts {
			total += n
			b.ReportMetric(float64(n), verb+"/preview")
		}
		b.ReportMetric(float64(total), "requests/preview")
		for verb := range counts {
			if verb == "patch" || verb == "create" || verb == "update" || verb == "delete" {
				b.Fatalf("a preview wrote: %v", counts)
			}
		}
	}
}
