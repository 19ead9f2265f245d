package launch

import (
	"os/exec"
	"syscall"
)

// detach puts a child in its own process group (a terminal's Ctrl-C reaches the
// launcher, which forwards it once) and kills it if the launcher dies.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// kill sends SIGKILL to cmd's process group (detach made it one): a rank's own
// children, which hold its pipes or its GPU memory, go with it.
func kill(cmd *exec.Cmd) {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		cmd.Process.Kill()
	}
}
