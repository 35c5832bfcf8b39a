package renderworker

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gitsync-dev/gitsync/internal/render"
)

// worker is one `gitsync render-worker` process and its channel.
type worker struct {
	cmd    *exec.Cmd
	in     *os.File // the parent writes requests and replies (the worker's fd 3)
	out    *os.File // the parent reads calls and results (the worker's fd 4)
	stderr *tail
	done   chan struct{} // closed once the process was waited for
	killed bool          // stopped by the parent (a deadline, a closing pool)
}

// start starts a worker and waits for it to say it is ready.
func start(opts *Options, isolate bool) (*worker, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	args := append([]string{"render-worker",
		"--memory-limit", strconv.FormatInt(opts.Bounds.Memory, 10),
		"--max-file-size", strconv.FormatInt(opts.Bounds.FileBytes, 10),
		"--max-open-files", strconv.FormatUint(opts.Bounds.OpenFiles, 10),
	}, opts.Args...)
	cmd := exec.Command(opts.Binary, args...)
	cmd.ExtraFiles = []*os.File{reqR, resW}
	cmd.Env = []string{} // nothing of the operator's environment (credentials, kubeconfig)
	w := &worker{cmd: cmd, in: reqW, out: resR, stderr: &tail{max: 8 << 10}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	cmd.SysProcAttr = sysProcAttr(isolate)
	err = cmd.Start()
	reqR.Close()
	resW.Close()
	if err != nil {
		reqW.Close()
		resR.Close()
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	_ = w.out.SetReadDeadline(time.Now().Add(opts.StartTimeout))
	m, err := readFrame(w.out, maxRequest)
	_ = w.out.SetReadDeadline(time.Time{})
	if err != nil || m.Kind != kindReady {
		w.kill()
		return nil, fmt.Errorf("starting a render worker: %v%s", err, w.stderrSuffix())
	}
	return w, nil
}

// sysProcAttr kills a worker with the operator and, when isolate, gives it a network
// namespace of its own (no interface but loopback: a render reaches nothing), a user
// namespace too where the operator is not root.
func sysProcAttr(isolate bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if !isolate {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWNET
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// kill stops the worker and waits for it.
func (w *worker) kill() {
	w.killed = true
	_ = w.cmd.Process.Kill()
	<-w.done
	w.in.Close()
	w.out.Close()
}

// failure says why the worker's channel broke: one of its bounds (a CPU limit's exit, the
// runtime's out-of-memory) or a death of another cause. It waits for the process.
func (w *worker) failure(opts *Options) error {
	select {
	case <-w.done:
	case <-time.After(2 * time.Second):
		w.kill()
	}
	state := w.cmd.ProcessState
	log := w.stderr.String()
	ws, _ := state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited() && ws.ExitStatus() == exitCPU, ws.Signaled() && ws.Signal() == syscall.SIGXCPU:
		return &render.LimitError{Bound: render.BoundCPU, Limit: opts.CPU.String() + " of CPU time"}
	case strings.Contains(log, "out of memory") || strings.Contains(log, "cannot allocate memory"):
		return &render.LimitError{Bound: render.BoundMemory, Limit: formatBytes(opts.Bounds.Memory)}
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && !w.killed:
		return fmt.Errorf("the render worker was killed (SIGKILL from outside the operator: the node's or the container's out-of-memory killer, or a person)")
	}
	return fmt.Errorf("the render worker died (%s)%s", state, w.stderrSuffix())
}

// stderrSuffix is the first line of what the worker printed, if anything.
func (w *worker) stderrSuffix() string {
	s := strings.TrimSpace(w.stderr.String())
	if s == "" {
		return ""
	}
	line, _, _ := strings.Cut(s, "\n")
	return ": " + line
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// tail keeps the first max bytes written to it: a Go runtime's fatal error is its first line.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *tail) reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}
