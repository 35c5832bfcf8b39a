package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var (
	env *testenv.Env
	// binary is the gitsync binary built for the package; kubeconfig reaches env as an admin.
	binary, kubeconfig, workDir string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "gitsync-fault-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("GITSYNC_FAULT_KEEP") == "" {
		defer os.RemoveAll(workDir)
	} else {
		fmt.Fprintln(os.Stderr, "fault: keeping the operators' logs in", workDir)
	}
	return testenv.Run(m, &env, func() (func(), error) {
		if binary, err = gitsyncproc.Build(workDir); err != nil {
			return nil, err
		}
		data, err := env.KubeConfig()
		if err != nil {
			return nil, err
		}
		kubeconfig = filepath.Join(workDir, "kubeconfig")
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			return nil, err
		}
		return stopSharedOperator, nil
	})
}

// The shared operator serves every test but those that run operators of their own
// (TestRenderWorkersTakeTheBombs, TestMaxTimeoutCapsChartDownloads, the SIGKILL test):
// two operators on one cluster would both reconcile everything. Go runs the non-parallel
// tests first, in file order, then the parallel ones; so the files of non-parallel tests
// that use the shared operator sort after kill_test.go (logs_, restart_, tenant_…,
// yaml_…), and the shared operator starts with the first of them. Like a Deployment's
// pod it is restarted when it dies, and its memory is capped, so that input that makes
// it allocate without bound crashes it (as in a cluster) instead of exhausting the test
// machine.
var (
	sharedOnce     sync.Once
	sharedLog      string
	sharedStop     = make(chan struct{})
	sharedStopped  = make(chan struct{})
	sharedMu       sync.Mutex
	shared         *gitsyncproc.Process
	sharedRestarts int
)

// sharedMemoryLimit caps the shared operator's address space: about 1 GiB of heap.
const sharedMemoryLimit = 3 << 30

// sharedOperator starts the package's long-running operator on first use.
func sharedOperator(t *testing.T) {
	t.Helper()
	var err error
	sharedOnce.Do(func() {
		sharedLog = filepath.Join(workDir, "shared-gitsync.log")
		opts := gitsyncproc.Options{
			Binary:      binary,
			Kubeconfig:  kubeconfig,
			StoragePath: filepath.Join(workDir, "shared-storage"),
			Log:         sharedLog,
			MemoryLimit: sharedMemoryLimit,
		}
		var p *gitsyncproc.Process
		if p, err = gitsyncproc.Run(opts); err != nil {
			close(sharedStopped)
			return
		}
		shared = p
		go superviseShared(p, opts)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sharedStopped:
		t.Fatal("the shared operator is not running")
	default:
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the shared operator's log:\n%s", gitsyncproc.Tail(sharedLog, 30))
		}
	})
}

// operatorState is the shared operator's pid and restart count when a test starts.
type operatorState struct{ pid, restarts int }

func sharedState() operatorState {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return operatorState{pid: shared.Pid(), restarts: sharedRestarts}
}

// expectAlive checks that the shared operator is the process it was at s: same pid, no
// restart.
func (s operatorState) expectAlive(g Gomega) {
	now := sharedState()
	g.Expect(now.restarts).To(Equal(s.restarts), "the operator was restarted")
	g.Expect(now.pid).To(Equal(s.pid), "the operator is another process")
}

// ownOperator starts an operator of the test's own with more `gitsync run` flags (its log
// in the suite's directory as NAME-gitsync.log, shown when the test fails). The test must
// have the cluster to itself: it is not parallel and its file sorts before kill_test.go,
// so that it runs before the shared operator starts (checked here).
func ownOperator(t *testing.T, name string, args ...string) *gitsyncproc.Process {
	t.Helper()
	sharedMu.Lock()
	running := shared != nil
	sharedMu.Unlock()
	if running {
		t.Fatal("the shared operator runs already: this test needs the cluster to itself (run it before any test that starts the shared operator)")
	}
	logPath := filepath.Join(workDir, name+"-gitsync.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the operator's log:\n%s", gitsyncproc.Tail(logPath, 40))
		}
	})
	return gitsyncproc.Start(t, gitsyncproc.Options{Binary: binary, Kubeconfig: kubeconfig, StoragePath: t.TempDir(),
		Log: logPath, Args: args})
}

// superviseShared restarts the shared operator whenever it ends, until the suite stops it.
func superviseShared(p *gitsyncproc.Process, opts gitsyncproc.Options) {
	defer close(sharedStopped)
	for {
		select {
		case <-sharedStop:
			p.Kill()
			return
		case <-p.Done():
		}
		_, exitErr := p.Exited()
		fmt.Fprintf(os.Stderr, "fault: the shared operator ended (%v); restarting it\n", exitErr)
		time.Sleep(time.Second)
		next, err := gitsyncproc.Run(opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fault: restarting the shared operator:", err)
			return
		}
		sharedMu.Lock()
		shared, sharedRestarts = next, sharedRestarts+1
		sharedMu.Unlock()
		p = next
	}
}

// waitSharedSteady waits (up to max) until the shared operator has not been restarted for
// quiet.
func waitSharedSteady(quiet, max time.Duration) {
	for deadline := time.Now().Add(max); time.Now().Before(deadline); {
		sharedMu.Lock()
		before := sharedRestarts
		sharedMu.Unlock()
		time.Sleep(quiet)
		sharedMu.Lock()
		after := sharedRestarts
		sharedMu.Unlock()
		if after == before {
			return
		}
	}
}

// sharedPid is the pid of the shared operator's current process.
func sharedPid() int {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return shared.Pid()
}

func stopSharedOperator() {
	if shared == nil {
		return
	}
	close(sharedStop)
	<-sharedStopped
	if sharedRestarts > 0 {
		fmt.Fprintf(os.Stderr, "fault: the shared operator was restarted %d times after crashing\n", sharedRestarts)
	}
}
