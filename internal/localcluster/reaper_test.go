package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process that ends without Stop (as a test binary killed by `go test -timeout`, whose
// panic runs no deferred function) leaves no kube-apiserver or etcd behind: the reaper
// kills them. The test runs itself as that process.
func TestControlPlaneDiesWithItsProcess(t *testing.T) {
	if os.Getenv("GITSYNC_REAPER_CHILD") != "" {
		c, err := Start()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Printf("pids %v\n", c.guarded)
		os.Exit(3) // no Stop, no deferred function
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: the reaper finds the control plane's processes there")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestControlPlaneDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "GITSYNC_REAPER_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	var pids []int
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "pids ["); ok {
			for _, f := range strings.Fields(strings.TrimSuffix(rest, "]")) {
				if p, err := strconv.Atoi(f); err == nil {
					pids = append(pids, p)
				}
			}
		}
	}
	if len(pids) != 2 {
		t.Fatalf("want the PIDs of kube-apiserver and etcd, got %v; child said:\n%s", pids, out.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d outlived the test process that started it by 30s", pid)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// alive tells whether pid runs (a zombie, whose parent has not reaped it, counts as ended).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}
