//go:build !unix

package launch

import (
	"fmt"
	"os"
	"runtime"
)

// resume does nothing: there is no SIGCONT here (checkSystem refuses to run).
func resume(p *os.Process) {}

// checkSystem refuses to run the launcher here: it stops its ranks with signals
// (SIGTERM to let each finish its step and save a checkpoint, SIGCONT for a stopped
// one), which this system cannot send (Windows only kills a process). The package
// builds here all the same (commands that import it, their tests' builds).
func checkSystem() error {
	return fmt.Errorf("launch: the launcher cannot run on %s: it stops its ranks with Unix signals (SIGTERM, then a checkpoint; SIGCONT), which %s cannot send; run it on Linux (or WSL 2 on Windows), or run train without --nproc-per-node or --hostfile", runtime.GOOS, runtime.GOOS)
}
