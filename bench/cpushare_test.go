package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ, 100 on Linux everywhere
// this runs).
const clockTick = 10 * time.Millisecond

// cpuShares is the CPU time each part of the harness used so far, to tell where a
// phase's machine time went: this process (gitsync and the harness's Go code), the Git
// server's processes (git http-backend and what it starts, counted once they end), the
// API server and etcd (this process's children, running throughout), and the whole
// machine's busy and idle time.
type cpuShares struct {
	self, git, apiServer, etcd, busy, idle time.Duration
}

// readCPUShares reads the shares now; sub of two readings is what a phase used.
func readCPUShares() cpuShares {
	var s cpuShares
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		s.git = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	pid := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		comm, fields, ok := procStat(path)
		if !ok || len(fields) < 13 || fields[1] != pid {
			continue
		}
		// Fields after the command: state, ppid, …, utime (12th), stime (13th).
		used := (atoi(fields[11]) + atoi(fields[12])) * clockTick
		switch comm {
		case "kube-apiserver":
			s.apiServer += used
		case "etcd":
			s.etcd += used
		}
	}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(data, []byte("\n"))
		f := strings.Fields(string(line)) // cpu user nice system idle iowait irq softirq steal
		for i := 1; i < len(f) && i <= 8; i++ {
			if i == 4 || i == 5 {
				s.idle += atoi(f[i]) * clockTick
			} else {
				s.busy += atoi(f[i]) * clockTick
			}
		}
	}
	return s
}

// procStat reads /proc/<pid>/stat: the command and the fields after it.
func procStat(path string) (comm string, fields []string, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, false
	}
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return string(data[open+1 : end]), strings.Fields(string(data[end+1:])), true
}

func atoi(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n)
}

// sub is what was used between before and s.
func (s cpuShares) sub(before cpuShares) cpuShares {
	return cpuShares{s.self - before.self, s.git - before.git, s.apiServer - before.apiServer,
		s.etcd - before.etcd, s.busy - before.busy, s.idle - before.idle}
}

// String names each share in CPU-seconds; "other" is the machine's busy time that
// none of the harness's processes account for (the kernel's own work, other programs,
// and time stolen by the hypervisor, which /proc/stat counts as busy). The git share
// is every child process that ended in the phase: during the cold phase that is the
// Git server's, besides the harness's own git commands for its one push.
func (s cpuShares) String() string {
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) }
	other := s.busy - s.self - s.git - s.apiServer - s.etcd
	return fmt.Sprintf("API server %s, etcd %s, gitsync and the harness's Go code %s, git processes (the Git server's) %s, other %s; machine busy %s, idle %s (CPU-seconds)",
		sec(s.apiServer), sec(s.etcd), sec(s.self), sec(s.git), sec(other), sec(s.busy), sec(s.idle))
}
