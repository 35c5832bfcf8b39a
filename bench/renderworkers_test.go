package bench

import (
	"os"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/renderworker"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// renderWorkers are the render workers of a benchmark's operator, as `gitsync run` has
// them by default: a warm pool of the gitsync binary (built once per process);
// GITSYNC_BENCH_RENDER=in-process renders in the benchmark's process instead, to compare.
func renderWorkers(b *testing.B) *renderworker.Options {
	b.Helper()
	if os.Getenv("GITSYNC_BENCH_RENDER") == "in-process" {
		return nil
	}
	return &renderworker.Options{Binary: gitsyncBinary(b)}
}

// workersPeakRSS is the largest peak resident set (VmHWM) of this process's render
// workers still running, in bytes.
func workersPeakRSS() int64 {
	var peak uint64
	for _, pid := range gitsyncproc.RenderWorkers(os.Getpid()) {
		if p, err := gitsyncproc.PeakRSS(pid); err == nil {
			peak = max(peak, p)
		}
	}
	return int64(peak)
}
