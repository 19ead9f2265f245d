//go:build !linux

package miniotest

import "syscall"

// sysProcAttr has no parent-death signal off Linux; Stop or Main stops the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
