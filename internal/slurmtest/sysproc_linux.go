package slurmtest

import "syscall"

// sysProcAttr makes the daemons die with the test binary (they would otherwise outlive a
// crashed or killed test run and keep their ports).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
