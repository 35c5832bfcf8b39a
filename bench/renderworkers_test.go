package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var peak int64
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		dir := filepath.Dir(f)
		if cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline")); !strings.Contains(string(cmd), "render-worker") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join(dir, "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				peak = max(peak, kb<<10)
			}
		}
	}
	return peak
}
