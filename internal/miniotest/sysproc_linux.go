package miniotest

import "syscall"

// sysProcAttr makes the server die with the test binary (it would otherwise outlive a
// crashed or killed test run and keep its port and data).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
