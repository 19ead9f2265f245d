//go:build !linux

package fetch

import (
	"os"
	"testing"
)

// runAsNobody returns true, except under root, where the test is skipped: dropping
// privileges in a child process is done on Linux only.
func runAsNobody(t *testing.T) bool {
	if os.Geteuid() == 0 {
		t.Skip("needs a directory this user cannot write; as root only on Linux")
	}
	return true
}
