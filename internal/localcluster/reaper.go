package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A process that ends without Stop — a test binary killed by `go test -timeout`, whose
// panic runs no deferred function, or a demo killed with SIGKILL — would leave its
// kube-apiserver and etcd running, holding ports and memory, until the machine stops.
// The reaper is a small shell of its own session that waits for this process to end and
// then kills them (and removes the certificate directory). Stop ends the reaper first.

// children returns the PIDs of this process's children whose command is one of names
// (read from /proc; none where there is no /proc).
func children(names ...string) []int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != self {
			continue
		}
		for _, n := range names {
			if s[open+1:end] == n {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// guard (re)starts the reaper for the control plane's current processes.
func (c *Cluster) guard() {
	c.unguard()
	pids := children("kube-apiserver", "etcd")
	if len(pids) == 0 {
		return
	}
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -9 %s 2>/dev/null; rm -rf '%s'",
		os.Getpid(), strings.Join(list, " "), c.certDir)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with the test's process group
	if cmd.Start() == nil {
		c.reaper = cmd
		c.guarded = pids
		go func() { _ = cmd.Wait() }()
	}
}

// unguard ends the reaper (the control plane is stopped, or restarted, by us).
func (c *Cluster) unguard() {
	if c.reaper != nil && c.reaper.Process != nil {
		_ = c.reaper.Process.Kill()
	}
	c.reaper, c.guarded = nil, nil
}
