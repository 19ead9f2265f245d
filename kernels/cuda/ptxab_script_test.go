package cuda

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXABUsage: tools/gpu/ptx-ab.sh run with too few arguments prints its usage
// and exits 2; it said "line 15: $1: unbound variable".
func TestPTXABUsage(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") == "true" { // .ci/run has bash
			t.Fatal("no bash")
		}
		t.Skip("no bash")
	}
	script := filepath.Join("..", "..", "tools", "gpu", "ptx-ab.sh")
	for _, args := range [][]string{nil, {"/tmp/ptx", "", ""}} {
		b, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(b), "usage: ") || strings.Contains(string(b), "unbound") {
			t.Errorf("ptx-ab.sh %q: %v, want exit 2 and its usage:\n%s", args, err, b)
		}
	}
}
