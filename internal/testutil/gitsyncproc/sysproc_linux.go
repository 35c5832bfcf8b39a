package gitsyncproc

import "syscall"

// sysProcAttr makes the kernel kill the operator when the test binary dies (strictly:
// the thread that started it), so that no operator outlives a killed or crashed test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
