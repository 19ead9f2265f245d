//go:build !linux

package slurmtest

import "syscall"

// sysProcAttr has no parent-death signal off Linux; Stop stops the daemons.
func sysProcAttr() *syscall.SysProcAttr { return nil }
