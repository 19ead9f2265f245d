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
