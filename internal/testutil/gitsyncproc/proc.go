package gitsyncproc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RenderWorkers are the running `gitsync render-worker` children of the process pid.
func RenderWorkers(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data) // pid (comm) state ppid …
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		dir := filepath.Dir(f)
		if cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline")); strings.Contains(string(cmd), "render-worker") {
			child, _ := strconv.Atoi(filepath.Base(dir))
			pids = append(pids, child)
		}
	}
	return pids
}

// PeakRSS is a process's peak resident set size (VmHWM in /proc/PID/status), in bytes.
func PeakRSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
