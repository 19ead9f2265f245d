//go:build linux

package fetch

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the unprivileged user (Linux's overflow uid and gid) that runAsNobody
// drops to.
const nobody = 65534

// runAsNobody makes a test that needs permission checks run under root too: as root it
// runs the test again in a child process of this test binary (copied where nobody may
// execute it) with the credentials of nobody, passes or fails with it, and returns
// false (the caller returns); as any other user it returns true (the caller goes on).
// Root ignores file modes, so a read-only directory is only read-only for the child.
func runAsNobody(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to root.
	dir, err := os.MkdirTemp("", "fetch-as-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fetch.test")
	copyFile(t, self, bin, 0o755)
	tmp := filepath.Join(dir, "tmp") // the child's TMPDIR: t.TempDir for nobody
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test as uid %d: %v\n%s", nobody, err, out)
	}
	t.Logf("ran as uid %d:\n%s", nobody, out)
	return false
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
