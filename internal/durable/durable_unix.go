//go:build unix

package durable

import "syscall"

const supported = true

var (
	errInvalid error = syscall.EINVAL
	errNoSys   error = syscall.ENOSYS
)
