//go:build !linux

package launch

import "os/exec"

// detach is a no-op where process groups and parent-death signals are not
// available (the launcher targets Linux).
func detach(cmd *exec.Cmd) {}

// kill kills cmd's process.
func kill(cmd *exec.Cmd) { cmd.Process.Kill() }
