package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the ways a person or a process manager asks the demo to stop: Ctrl-C,
// `kill`, a process manager's SIGTERM, and the hang-up of a closed terminal.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// WithStopSignals returns a context that ends at the first stop signal, and a function
// that gives the signals back. It takes these signals over from any earlier handler:
// controller-runtime's (which `gitsync` installs for every command) exits 1 at once on a
// second signal, and a stopped demo often gets two — `make demo` killed as a process
// group (`kill -TERM -PGID`, or a process manager) delivers the group's SIGTERM, and make
// forwards its own right after. That exit skipped the cleanup and left etcd's data and
// the demo directory behind. Here a further signal only says that the demo is stopping:
// the cleanup is bounded (each control plane process gets a few seconds, then SIGKILL).
//
// SIGPIPE is taken too, so that a closed pipe on stdout (`make demo | tee`, its reader
// killed with the group) makes writes fail instead of killing the demo before it cleans up.
func WithStopSignals(parent context.Context, out io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	signal.Reset(stopSignals...)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		stopping := false
		for {
			select {
			case <-done:
				return
			case <-pipes: // not a stop request: the write that raised it fails instead
			case s := <-sigs:
				if stopping {
					fmt.Fprintf(out, "%v: already stopping (cleaning up the local API server, etcd and the demo's files)\n", s)
				}
				stopping = true
				cancel()
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		signal.Stop(pipes)
		close(done)
		cancel()
	}
}
