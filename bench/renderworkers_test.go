package bench

import (
	"os"
	"sync"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/renderworker"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

var (
	workerBinOnce sync.Once
	workerBin     string
	workerBinErr  error
)

// renderWorkers are the render workers of a benchmark's operator, as `gitsync run` has
// them by default: a warm pool of the gitsync binary (built once per process);
// GITSYNC_BENCH_RENDER=in-process renders in the benchmark's process instead, to compare.
func renderWorkers(b *testing.B) *renderworker.Options {
	b.Helper()
	if os.Getenv("GITSYNC_BENCH_RENDER") == "in-process" {
		return nil
	}
	workerBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitsync-bench-bin-")
		if err != nil {
			workerBinErr = err
			return
		}
		workerBin, workerBinErr = gitsyncproc.Build(dir)
	})
	if workerBinErr != nil {
		b.Fatal(workerBinErr)
	}
	return &renderworker.Options{Binary: workerBin}
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
