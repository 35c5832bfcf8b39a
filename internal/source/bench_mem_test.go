package source

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// largeHistory is 40 commits that each replace a 5 MiB file of random
// (incompressible) bytes: 200 MiB of history, a 5 MiB tip.
const (
	largeCommits  = 40
	largeBlobSize = 5 << 20
)

// BenchmarkFetchLargeHistory reports the peak Go heap (sampled) and the peak
// RSS of the process during one first fetch of a repository with ~200 MiB of
// history: the branch tip, and a commit in the middle of the history (pinned
// commit, off the tip) with and without a server that allows fetching a commit
// by its id. Run it with -benchtime=1x -count=N and take medians.
func BenchmarkFetchLargeHistory(b *testing.B) {
	srv := gittest.NewServer(b, gittest.Options{})
	repo := srv.CreateRepo("large")
	var pinned string
	blob := make([]byte, largeBlobSize)
	for c := range largeCommits {
		sha := repo.CommitFunc("main", fmt.Sprintf("commit %d", c), func(wt string) {
			_, _ = rand.Read(blob)
			if err := os.WriteFile(filepath.Join(wt, "data.bin"), blob, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wt, "cm.yaml"), benchManifest(c, 0, 0), 0o644); err != nil {
				b.Fatal(err)
			}
		})
		if c == largeCommits/2 {
			pinned = sha
		}
	}
	url := srv.HTTPURL("large")
	for _, bc := range []struct {
		name string
		ref  Ref
		byID bool // the server allows fetching any reachable commit by id
	}{
		{"Tip", Ref{Branch: "main"}, false},
		{"PinnedCommit", Ref{Commit: pinned}, true},
		{"PinnedCommitNoFetchByID", Ref{Commit: pinned}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.byID {
				repo.Config("uploadpack.allowReachableSHA1InWant", "true")
			} else {
				repo.Config("uploadpack.allowReachableSHA1InWant", "")
			}
			var peakHeap, peakRSS uint64
			for range b.N {
				storage := b.TempDir()
				f, err := NewFetcher(storage)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				resetPeakRSS()
				stop := sampleHeap()
				a, err := f.Fetch(context.Background(), Request{URL: url, Ref: bc.ref, Timeout: 10 * time.Minute})
				heap := stop()
				rss := peakRSSBytes()
				if err != nil {
					b.Fatal(err)
				}
				if !a.Fetched {
					b.Fatal("nothing fetched")
				}
				peakHeap, peakRSS = max(peakHeap, heap), max(peakRSS, rss)
			}
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peakRSS)/(1<<20), "peak-rss-MiB")
		})
	}
}

// sampleHeap samples the live heap every 2 ms until the returned function is
// called, which returns the highest sample.
func sampleHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// resetPeakRSS resets the kernel's record of the process's peak RSS (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o644) }

// peakRSSBytes is VmHWM of /proc/self/status: the peak RSS since resetPeakRSS.
func peakRSSBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
