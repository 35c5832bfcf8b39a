//go:build !linux

package gitsyncproc

import "syscall"

// sysProcAttr: without Pdeathsig, t.Cleanup alone kills the operator.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// limitMemory does nothing where prlimit(2) does not exist.
func limitMemory(int, uint64) error { return nil }
