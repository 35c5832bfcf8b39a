package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// gitsyncBinary is the built gitsync binary, built once per process: the one `gitsync
// run` benchmarks start and the render workers' one (see renderWorkers).
// GITSYNC_BENCH_BINARY=PATH uses a binary built before instead (e.g. of the commit before
// a change, to run the same benchmark on both in turn).
func gitsyncBinary(b *testing.B) string {
	b.Helper()
	if path := os.Getenv("GITSYNC_BENCH_BINARY"); path != "" {
		return path
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitsync-bench-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath, binErr = gitsyncproc.Build(dir)
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return binPath
}

// binaryOperator is `gitsync run`, the built binary in its own process, as a user runs
// it: it talks to the API server directly, its log is a file, its webhook receiver and (with
// GITSYNC_PPROF_ADDRESS) its profiles listen on loopback.
type binaryOperator struct {
	proc    *gitsyncproc.Process
	log     string
	started time.Time
	webhook string
	// offset is where this process's lines start in log.
	offset int64
}

// startBinaryOperator starts `gitsync run` with its defaults but for what a test on
// loopback needs (gitsyncproc.Start) and the webhook receiver on a free port.
func startBinaryOperator(b *testing.B, kubeconfig, storage string) *binaryOperator {
	b.Helper()
	op := &binaryOperator{log: filepath.Join(b.TempDir(), "gitsync.log"), webhook: freeAddress(b)}
	if path := os.Getenv("GITSYNC_BENCH_BINARY_LOG"); path != "" {
		op.log = path // kept after the run; every operator of the run appends to it
	}
	if os.Getenv("GITSYNC_BENCH_BINARY_CPUPROFILE") != "" {
		b.Setenv("GITSYNC_PPROF_ADDRESS", "127.0.0.1:0") // the port it got is in its log
	}
	bin := gitsyncBinary(b)
	if fi, err := os.Stat(op.log); err == nil {
		op.offset = fi.Size() // an earlier operator's lines are not this one's
	}
	op.started = time.Now()
	op.proc = gitsyncproc.Start(b, gitsyncproc.Options{
		Binary: bin, Kubeconfig: kubeconfig, StoragePath: storage, Log: op.log,
		Args: []string{"--webhook-bind-address", op.webhook},
	})
	return op
}

func freeAddress(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// readyControllers are the controllers a new source and Application go through.
var readyControllers = []string{"gitrepository", "application"}

// waitReadyToSync waits until the operator's log says that the GitRepository and
// Application controllers started their workers (their caches synced) and returns the
// time from the process's start to the later of the two, as the log's own timestamps
// (milliseconds) tell it.
func (op *binaryOperator) waitReadyToSync(b *testing.B) time.Duration {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if at, ok := op.workersStarted(); ok {
			return at.Sub(op.started)
		}
		if exited, err := op.proc.Exited(); exited {
			b.Fatalf("gitsync run exited (%v): %s", err, gitsyncproc.Tail(op.log, 20))
		}
		if time.Now().After(deadline) {
			b.Fatalf("gitsync run not ready to sync after 5m: %s", gitsyncproc.Tail(op.log, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workersStarted reads the log: when the last of readyControllers started its workers.
func (op *binaryOperator) workersStarted() (time.Time, bool) {
	f, err := os.Open(op.log)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	if _, err := f.Seek(op.offset, io.SeekStart); err != nil {
		return time.Time{}, false
	}
	seen := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			TS         string `json:"ts"`
			Msg        string `json:"msg"`
			Controller string `json:"controller"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "Starting workers" {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, line.TS); err == nil {
			seen[line.Controller] = at
		}
	}
	var last time.Time
	for _, c := range readyControllers {
		at, ok := seen[c]
		if !ok {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// stop ends the operator as a rollout does (SIGTERM) and says how long it took.
func (op *binaryOperator) stop(b *testing.B) {
	b.Helper()
	if !op.proc.Stop(30 * time.Second) {
		b.Logf("gitsync run did not stop within 30s of SIGTERM: killed")
	}
}

// cpu is the CPU time the operator process and its running render workers used so far.
func (op *binaryOperator) cpu() (operator, workers time.Duration) {
	for _, pid := range gitsyncproc.RenderWorkers(op.proc.Pid()) {
		workers += processCPU(pid)
	}
	return processCPU(op.proc.Pid()), workers
}

// processCPU is the user and system time of process pid so far.
func processCPU(pid int) time.Duration {
	_, fields, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok || len(fields) < 13 {
		return 0
	}
	return (atoi(fields[11]) + atoi(fields[12])) * clockTick
}

// pprofAddress is where the operator serves its profiles, as its log says.
func (op *binaryOperator) pprofAddress() string {
	for _, l := range op.logLines(`"msg":"serving Go profiles"`) {
		var line struct {
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(l), &line) == nil {
			return line.Address
		}
	}
	return ""
}

// cpuProfile writes CPU profiles of the operator process, taken from its
// GITSYNC_PPROF_ADDRESS endpoint 10 s at a time, from now until the returned func is
// called, into the files the environment variable names followed by .0, .1, … (`go tool
// pprof BINARY FILE.*` reads them as one), when set.
func (op *binaryOperator) cpuProfile(b *testing.B, variable string) (stop func()) {
	path := os.Getenv(variable)
	if path == "" {
		return func() {}
	}
	addr := op.pprofAddress()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=" + strconv.Itoa(10))
			if err != nil {
				b.Logf("profiling the operator: %v", err)
				return
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Logf("profiling the operator: %d %v", resp.StatusCode, err)
				return
			}
			if err := os.WriteFile(path+"."+strconv.Itoa(i), data, 0o644); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// logLines are the lines of the operator's log that contain s.
func (op *binaryOperator) logLines(s string) []string {
	data, _ := os.ReadFile(op.log)
	var out []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
