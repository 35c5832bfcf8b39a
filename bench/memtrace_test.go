package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"syscall"
	"time"
)

// memTrace samples, every 10 ms until stopped, what the process's resident set is
// made of, and keeps the sample where the resident set was largest
// (GITSYNC_BENCH_MEMTRACE=1): the mapped binary and other files, anonymous memory,
// and of the latter the Go heap's objects, its free and unused room, what it gave
// back to the OS, goroutine stacks, and the heap goal the collector ran to; and the
// largest heap a collection of the phase marked live. Its wake-ups keep an idle process
// from idling, which moves the resident set by a few MiB: compare figures taken alike.
type memTrace struct {
	done, stopped chan struct{}
	peak          memSample
	maxLive       uint64 // the most a collection of the phase marked live
}

type memSample struct {
	rssFile, rssAnon                                        int64
	objects, free, unused, released, stacks, goal, gc, live uint64
}

var memTraceMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/gc/heap/goal:bytes",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
}

// startMemTrace starts a trace when GITSYNC_BENCH_MEMTRACE is set; nil otherwise.
func startMemTrace() *memTrace {
	if os.Getenv("GITSYNC_BENCH_MEMTRACE") == "" {
		return nil
	}
	t := &memTrace{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(t.stopped)
		samples := make([]metrics.Sample, len(memTraceMetrics))
		for i, name := range memTraceMetrics {
			samples[i].Name = name
		}
		buf := make([]byte, 4096)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		gc0 := uint64(0)
		for first := true; ; first = false {
			s := readMemSample(samples, buf)
			if first {
				gc0 = s.gc
			}
			s.gc -= gc0
			if s.rssFile+s.rssAnon > t.peak.rssFile+t.peak.rssAnon {
				t.peak = s
			}
			t.maxLive = max(t.maxLive, s.live)
			select {
			case <-t.done:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// readMemSample reads one sample. It allocates next to nothing (buf holds
// /proc/self/status), so that sampling does not itself grow the heap it measures.
func readMemSample(samples []metrics.Sample, buf []byte) memSample {
	var s memSample
	if fd, err := syscall.Open("/proc/self/status", syscall.O_RDONLY, 0); err == nil {
		n, _ := syscall.Read(fd, buf)
		_ = syscall.Close(fd)
		s.rssFile, s.rssAnon = statusKB(buf[:max(n, 0)], "RssFile:")<<10, statusKB(buf[:max(n, 0)], "RssAnon:")<<10
	}
	metrics.Read(samples)
	v := func(i int) uint64 { return samples[i].Value.Uint64() }
	s.objects, s.free, s.unused, s.released, s.stacks, s.goal, s.gc, s.live = v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7)
	return s
}

// statusKB reads the number of kB on the line of /proc/self/status that starts with key.
func statusKB(status []byte, key string) int64 {
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0
	}
	var kb int64
	for _, c := range status[i+len(key):] {
		switch {
		case c >= '0' && c <= '9':
			kb = kb*10 + int64(c-'0')
		case c == ' ' || c == '\t':
		default:
			return kb
		}
	}
	return kb
}

// stop ends the trace and describes its largest sample ("" without a trace).
func (t *memTrace) stop() string {
	if t == nil {
		return ""
	}
	close(t.done)
	<-t.stopped
	p, mib := t.peak, func(n uint64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	return fmt.Sprintf("files %s + anonymous %s MiB; heap objects %s, free %s, unused %s, released %s, stacks %s, goal %s MiB; %d collections, the largest live heap after one %s MiB",
		mib(uint64(p.rssFile)), mib(uint64(p.rssAnon)), mib(p.objects), mib(p.free), mib(p.unused), mib(p.released),
		mib(p.stacks), mib(p.goal), p.gc, mib(t.maxLive))
}
