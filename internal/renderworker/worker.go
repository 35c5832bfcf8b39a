package renderworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// Exit codes of a worker that the parent reads as a bound.
const (
	// exitCPU: the render used its CPU time (RLIMIT_CPU's SIGXCPU).
	exitCPU = 3
	// exitProtocol: the parent sent something the worker cannot read.
	exitProtocol = 4
)

// Bounds are what the kernel holds a worker process to. The worker sets them on itself
// before it reads its first request: nothing of a tenant has run by then.
type Bounds struct {
	// Memory caps the worker's data segment (RLIMIT_DATA: the heap, stacks and every
	// private writable mapping; Go's reserved but unused address space does not count,
	// so unlike RLIMIT_AS it tracks what the process really uses). The Go runtime's soft
	// limit is set to 3/4 of it, so that the collector works harder before the cap.
	Memory int64
	// FileBytes caps the size of any file the worker writes (RLIMIT_FSIZE); a render
	// writes no file.
	FileBytes int64
	// OpenFiles caps the worker's file descriptors (RLIMIT_NOFILE).
	OpenFiles uint64
}

// Serve is `gitsync render-worker`: it applies b to this process, then renders the
// requests the parent sends on in (fd 3) and answers on out (fd 4) until in closes. It
// returns the process's exit code.
func Serve(in io.Reader, out io.Writer, b Bounds) int {
	if err := b.apply(); err != nil {
		fmt.Fprintln(os.Stderr, "render-worker: setting its bounds:", err)
		return 1
	}
	// RLIMIT_CPU's soft limit sends SIGXCPU, which the Go runtime ignores by default.
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		os.Exit(exitCPU)
	}()
	if err := writeFrame(out, &message{Kind: kindReady}); err != nil {
		return 0 // the parent is gone
	}
	for {
		m, err := readFrame(in, maxRequest)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0 // the parent closed the channel, or died
		}
		if err != nil || m.Kind != kindRender || m.Render == nil {
			fmt.Fprintln(os.Stderr, "render-worker: unexpected request:", err)
			return exitProtocol
		}
		res := renderOne(m.Render, &channel{in: in, out: out})
		if err := writeFrame(out, &message{Kind: kindResult, Result: res}); err != nil {
			return 0
		}
	}
}

// maxRequest bounds a frame from the parent (an Application, a reply: a dependency's
// files, a lookup's list).
const maxRequest = 256 << 20

// apply sets b on this process.
func (b Bounds) apply() error {
	if b.Memory > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(b.Memory), Max: uint64(b.Memory)}); err != nil {
			return fmt.Errorf("RLIMIT_DATA: %w", err)
		}
		debug.SetMemoryLimit(b.Memory / 4 * 3)
	}
	if b.FileBytes > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(b.FileBytes), Max: uint64(b.FileBytes)}); err != nil {
			return fmt.Errorf("RLIMIT_FSIZE: %w", err)
		}
	}
	if b.OpenFiles > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: b.OpenFiles, Max: b.OpenFiles}); err != nil {
			return fmt.Errorf("RLIMIT_NOFILE: %w", err)
		}
	}
	return nil
}

// limitCPU lets this process use seconds more of CPU time from now (RLIMIT_CPU counts the
// process's whole life, and a warm worker renders many times).
func limitCPU(seconds uint64) error {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	used := uint64(ru.Utime.Sec + ru.Stime.Sec + 1)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CPU, &lim); err != nil {
		return err
	}
	lim.Cur = used + seconds
	if lim.Max != unix.RLIM_INFINITY && lim.Cur > lim.Max {
		lim.Cur = lim.Max
	}
	return unix.Setrlimit(unix.RLIMIT_CPU, &lim)
}

// renderOne renders one request, calling back through ch for what it takes from the
// cluster.
func renderOne(req *renderRequest, ch *channel) *result {
	fail := func(err error) *result { return &result{Err: errorOf(err, renderClass)} }
	if req.CPUSeconds > 0 {
		if err := limitCPU(req.CPUSeconds); err != nil {
			return fail(fmt.Errorf("setting the render's CPU limit: %w", err))
		}
	}
	app := &gitsyncv1.Application{}
	if err := json.Unmarshal(req.App, app); err != nil {
		return fail(fmt.Errorf("decoding the Application: %w", err))
	}
	var cluster *render.Cluster
	if !req.Offline {
		cluster = remoteCluster(ch, req.Has)
	}
	res, err := render.Render(context.Background(), app, req.Source, cluster)
	if err != nil {
		return fail(err)
	}
	out := &result{
		Chart:     chartInfo{Name: res.Chart.Name, Version: res.Chart.Version, CRDs: res.Chart.CRDs, CreateOnly: res.Chart.CreateOnly},
		Encrypted: res.Encrypted,
		Sensitive: res.Sensitive,
		Objects:   make([]json.RawMessage, 0, len(res.Objects)),
	}
	for _, o := range res.Objects {
		data, err := o.MarshalJSON()
		if err != nil {
			return fail(fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err))
		}
		out.Objects = append(out.Objects, data)
	}
	return out
}
