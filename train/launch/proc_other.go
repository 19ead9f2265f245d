//go:build !linux

package launch

import "os/exec"

// detach is a no-op where process groups and parent-death signals are not
// available (the launcher targets Linux).
func detach(cmd *exec.Cmd) {}
