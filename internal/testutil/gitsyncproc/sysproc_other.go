//go:build !linux

package gitsyncproc

import "syscall"

// sysProcAttr: without Pdeathsig, t.Cleanup alone kills the operator.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
