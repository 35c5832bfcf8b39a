package demo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega/format"

	"github.com/gitsync-dev/gitsync/internal/localcluster"
)

// These tests run the real thing: the gitsync binary, built by `make build`, started as
// `gitsync demo` (or `make demo`) in a process group of its own, as a shell starts it.

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// gitsyncBinary builds gitsync once for the package's tests with `make build` (the
// recipe `make demo` runs), into a directory removed when the tests end.
func gitsyncBinary(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitsync-demo-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "gitsync")
		out, err := exec.Command("make", "-C", root, "--no-print-directory", "build", "GITSYNC_BIN="+binaryPath).CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("make build: %w\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func TestMain(m *testing.M) {
	format.MaxLength = 0 // a failure shows all the demo printed
	code := m.Run()
	if binaryPath != "" {
		_ = os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// demoProcess is a running `gitsync demo` (or `make demo`) and what it printed.
type demoProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	tmp    string // its TMPDIR, which must be empty once it ended
	mu     sync.Mutex
	out    strings.Builder
	lines  chan string
	waited chan struct{}
	err    error
}

// startDemo starts name args in a new process group with an empty TMPDIR of its own and
// the control plane's binaries found as localcluster finds them.
func startDemo(t *testing.T, name string, args ...string) *demoProcess {
	t.Helper()
	assets, err := localcluster.Assets()
	if err != nil {
		t.Fatal(err)
	}
	p := &demoProcess{t: t, tmp: filepath.Join(t.TempDir(), "tmp"), lines: make(chan string, 1000), waited: make(chan struct{})}
	if err := os.Mkdir(p.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir = repoRoot(t)
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp, "KUBEBUILDER_ASSETS="+assets, "ENVTEST_ASSETS_DIR="+assets,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		w.Close()
		close(p.waited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.waited:
		default: // a failed test: leave nothing running
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.waited
		}
	})
	return p
}

// output is everything the process printed so far.
func (p *demoProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor returns once the process printed a line containing s; it fails the test if the
// process ends first (or has not printed it after several minutes: a hang).
func (p *demoProcess) waitFor(s string) {
	p.t.Helper()
	hang := time.After(5 * time.Minute)
	for {
		select {
		case line := <-p.lines:
			if strings.Contains(line, s) {
				return
			}
		case <-p.waited:
			p.t.Fatalf("ended (%v) before printing %q:\n%s", p.err, s, p.output())
		case <-hang:
			p.t.Fatalf("did not print %q:\n%s", s, p.output())
		}
	}
}

// signal sends sig to the process, or to its whole process group.
func (p *demoProcess) signal(sig syscall.Signal, group bool) {
	p.t.Helper()
	pid := p.cmd.Process.Pid
	if group {
		pid = -pid
	}
	if err := syscall.Kill(pid, sig); err != nil {
		p.t.Fatalf("kill %v %d: %v", sig, pid, err)
	}
}

// wait waits for the process to end and returns its error (nil: exit 0).
func (p *demoProcess) wait() error {
	p.t.Helper()
	select {
	case <-p.waited:
		return p.err
	case <-time.After(3 * time.Minute):
		p.t.Fatalf("did not end:\n%s", p.output())
		return nil
	}
}

// leftovers lists what the process left in its TMPDIR, and the processes of its group
// still alive.
func (p *demoProcess) leftovers() []string {
	var left []string
	entries, err := os.ReadDir(p.tmp)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, "$TMPDIR/"+e.Name())
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		out, _ := exec.Command("pgrep", "-a", "-g", fmt.Sprint(p.cmd.Process.Pid)).CombinedOutput()
		left = append(left, "processes of its group: "+string(out))
	}
	return left
}
