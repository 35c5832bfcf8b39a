package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

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

// The shared operator serves every test but the SIGKILL one (which runs first, alone,
// with operators of its own): two operators on one cluster would both reconcile
// everything.
var (
	sharedOnce sync.Once
	shared     *gitsyncproc.Process
	sharedErr  error
	sharedLog  string
)

// sharedOperator starts the package's long-running operator on first use.
func sharedOperator(t *testing.T) {
	t.Helper()
	sharedOnce.Do(func() {
		sharedLog = filepath.Join(workDir, "shared-gitsync.log")
		shared, sharedErr = gitsyncproc.Run(gitsyncproc.Options{
			Binary:      binary,
			Kubeconfig:  kubeconfig,
			StoragePath: filepath.Join(workDir, "shared-storage"),
			Log:         sharedLog,
		})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	if exited, err := shared.Exited(); exited {
		t.Fatalf("the shared operator exited: %v\n%s", err, gitsyncproc.Tail(sharedLog, 40))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the shared operator's log:\n%s", gitsyncproc.Tail(sharedLog, 30))
		}
	})
}

func stopSharedOperator() {
	if shared != nil {
		shared.Kill()
	}
}
