// Package gitsyncproc builds the gitsync binary and runs `gitsync run` as a subprocess
// for tests that kill, restart or outlive an operator.
package gitsyncproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles ./cmd/gitsync of the module that holds the working directory into dir
// and returns the binary's path.
func Build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gitsync")
	return bin, BuildAt(root, bin)
}

// BuildAt compiles ./cmd/gitsync of the source tree at src (the module's root, e.g. a
// checkout of an earlier release) into the file bin, with the local toolchain, static
// (CGO_ENABLED=0) as `make build` and the image build it: a cgo binary's threads take
// 8 MiB stacks from the render workers' data limit, and die with "pthread_create failed"
// under a small bound.
func BuildAt(src, bin string) error {
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gitsync")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building gitsync in %s: %w: %s", src, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("finding the module root: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

// Options of one operator process.
type Options struct {
	// Binary is the path returned by Build.
	Binary string
	// Kubeconfig is the path of a kubeconfig file.
	Kubeconfig string
	// StoragePath holds the checkouts; keep it across restarts as a real pod's volume would.
	StoragePath string
	// Log receives the process's output (appended).
	Log string
	// Args are more flags of `gitsync run`.
	Args []string
	// CommonFlagsOnly passes only the flags that every release's `gitsync run` accepts
	// (--kubeconfig, --storage-path and the three bind addresses), for an earlier
	// release's binary: v0.1.0 knows neither --deny-egress nor --min-interval (it had no
	// egress guard and no interval cap).
	CommonFlagsOnly bool
	// MemoryLimit, when not 0, caps the process's address space (RLIMIT_AS, on Linux) so
	// that a runaway allocation ends the operator, as a container's memory limit would,
	// instead of exhausting the machine. Go reserves some address space up front: allow
	// about 1.5 GiB more than the heap that is meant to fit.
	MemoryLimit uint64
}

// Process is a running `gitsync run`.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	err  error
}

// Start starts `gitsync run` with the metrics, health and webhook servers and the egress
// guard off. The process
// dies with the test binary (Pdeathsig on Linux) and t.Cleanup kills it.
func Start(t testing.TB, o Options) *Process {
	t.Helper()
	p, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Run starts `gitsync run` like Start, for callers without a test (TestMain); the caller
// must Kill it.
func Run(o Options) (*Process, error) {
	log, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the operator's log: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== gitsyncproc: starting at %s\n", time.Now().Format(time.RFC3339Nano))
	args := []string{"run",
		"--kubeconfig", o.Kubeconfig,
		"--storage-path", o.StoragePath,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "0",
		"--webhook-bind-address", "0",
	}
	if !o.CommonFlagsOnly {
		args = append(args,
			"--deny-egress=",   // the test servers are on loopback; a later --deny-egress in Args wins
			"--min-interval=0", // the tests poll every second or faster
		)
	}
	args = append(args, o.Args...)
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.Kubeconfig)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting gitsync: %w", err)
	}
	if o.MemoryLimit != 0 {
		if err := limitMemory(cmd.Process.Pid, o.MemoryLimit); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("limiting the operator's memory: %w", err)
		}
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Kill sends SIGKILL and waits for the process to end. Killing a dead process is a no-op.
func (p *Process) Kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	})
	<-p.done
}

// Stop sends SIGTERM, as a Deployment's rollout does, and waits for the process to end;
// after grace it sends SIGKILL. It reports whether the process ended within grace.
func (p *Process) Stop(grace time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.Kill()
		return false
	}
}

// Exited reports whether the process ended (without being killed by Kill) and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Tail returns the last n lines of a log file (for failure messages).
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
