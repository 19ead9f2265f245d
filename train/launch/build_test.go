package launch

import (
	"os"
	"os/exec"
	"testing"
)

// TestBuildsForOtherSystems: the package builds for Windows (it did not:
// syscall.SIGCONT; the launcher refuses to run there, checkSystem) and vets for
// macOS, so that a command importing it builds there too. make lint runs the same
// builds first, so that here they come from the build cache (a cold cache takes a
// couple of minutes on 2 cores); -short skips them.
func TestBuildsForOtherSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds for other systems (make lint runs them)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	for _, c := range []struct{ goos, verb string }{{"windows", "build"}, {"darwin", "vet"}} {
		cmd := exec.Command(gobin, c.verb, ".")
		cmd.Env = append(os.Environ(), "GOOS="+c.goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if c.verb == "build" {
			cmd.Args = append(cmd.Args[:2], "-o", os.DevNull, ".")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go %s ./train/launch: %v\n%s", c.goos, c.verb, err, out)
		}
	}
}
