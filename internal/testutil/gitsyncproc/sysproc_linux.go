package gitsyncproc

import (
	"fmt"
	"syscall"
	"unsafe"
)

// sysProcAttr makes the kernel kill the operator when the test binary dies (strictly:
// the thread that started it), so that no operator outlives a killed or crashed test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// limitMemory sets the RLIMIT_AS of process pid (prlimit(2); the syscall package has no
// wrapper for another process).
func limitMemory(pid int, limit uint64) error {
	const rlimitAS = 9 // RLIMIT_AS on every Linux architecture Go supports
	lim := syscall.Rlimit{Cur: limit, Max: limit}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), rlimitAS, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("prlimit: %w", errno)
	}
	return nil
}
