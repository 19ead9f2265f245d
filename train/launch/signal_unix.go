//go:build unix

package launch

import (
	"os"
	"syscall"
)

// resume continues a stopped (hung) rank, so that a stop signal sent to it acts.
func resume(p *os.Process) { p.Signal(syscall.SIGCONT) }

// checkSystem reports whether the launcher can run here: it stops its ranks with
// signals (SIGTERM, SIGINT, SIGCONT), which every Unix has.
func checkSystem() error { return nil }
