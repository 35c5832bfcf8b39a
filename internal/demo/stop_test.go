package demo

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// ready is the line the demo prints once everything runs.
const ready = "The demo runs until Ctrl-C"

// Every way of stopping a real `gitsync demo` — Ctrl-C (SIGINT to the terminal's process
// group), SIGTERM to gitsync (a process manager, `kill PID`), SIGTERM to the process
// group (`kill -TERM -PGID`), SIGHUP (a closed terminal) — once it runs or while it
// starts, cleans up: it prints "stopped", exits 0, and leaves nothing in its TMPDIR
// (etcd's data, the API server's certificates, the demo directory) and no process behind.
func TestDemoStopsCleanly(t *testing.T) {
	bin := gitsyncBinary(t)
	for _, tc := range []struct {
		name  string
		when  string
		sig   syscall.Signal
		group bool
	}{
		{"SIGTERM to the process group", ready, syscall.SIGTERM, true},
		{"SIGTERM to gitsync while it starts", "created GitRepository", syscall.SIGTERM, false},
		{"Ctrl-C", ready, syscall.SIGINT, true},
		{"SIGHUP while it starts", "starting a local kube-apiserver", syscall.SIGHUP, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := startDemo(t, bin, "demo")
			p.waitFor(tc.when)
			p.signal(tc.sig, tc.group)
			err := p.wait()
			g.Expect(err).NotTo(HaveOccurred(), p.output())
			g.Expect(p.output()).To(MatchRegexp(`(?m)^(interrupted: )?stopped \(the local API server and etcd are stopped and their data removed; removed .*gitsync-demo-`), p.output())
			g.Expect(p.leftovers()).To(BeEmpty(), p.output())
		})
	}
}

// `make demo` stopped as a process manager stops it — SIGTERM to its process group, which
// make then forwards to gitsync a second time — ends without "make: *** Error", after
// gitsync cleaned up. (make itself then ends on the SIGTERM it got, as it does for any
// signal; gitsync's own exit status is what make would have reported.)
func TestMakeDemoStopsOnSIGTERMToItsGroup(t *testing.T) {
	g := NewWithT(t)
	bin := gitsyncBinary(t)
	p := startDemo(t, "make", "--no-print-directory", "demo", "GITSYNC_BIN="+bin)
	p.waitFor(ready)
	p.signal(syscall.SIGTERM, true)
	if err := p.wait(); err != nil {
		var exit *exec.ExitError
		g.Expect(errors.As(err, &exit)).To(BeTrue(), "make ended with %v:\n%s", err, p.output())
		status := exit.Sys().(syscall.WaitStatus)
		g.Expect(status.Signaled() && status.Signal() == syscall.SIGTERM).To(BeTrue(), "make ended with %v:\n%s", err, p.output())
	}
	g.Expect(p.output()).NotTo(ContainSubstring("Error"))
	g.Expect(p.output()).To(MatchRegexp(`(?m)^stopped \(`))
	g.Expect(p.leftovers()).To(BeEmpty(), p.output())
}
