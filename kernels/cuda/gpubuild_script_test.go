package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubGo stands in for go in tools/gpu/build.sh: "go build|test -c -o OUT PKG" writes
// OUT (OUT/NAME for a folder) as a file of $STUB_MIB MiB of $STUB_BYTES (/dev/zero or
// /dev/urandom) for the kernels' test binary, a few bytes for the others, and for
// ./cmd/prep a prep that makes the dataset folder it is given.
const stubGo = `#!/bin/sh
if [ "$1" = version ]; then echo "go version go1.26 linux/amd64"; exit 0; fi
out= prev=
for a; do [ "$prev" = -o ] && out=$a; prev=$a; done
case "$out" in */) out=$out$(basename "$a") ;; esac
case "$a" in
./cmd/prep) printf '#!/bin/sh\nmkdir -p "$3/shakespeare"\n' > "$out"; chmod +x "$out" ;;
./kernels/cuda) head -c $((STUB_MIB * 1048576)) "$STUB_BYTES" > "$out" ;;
*) echo stub > "$out" ;;
esac
`

// TestGPUBuildSize: tools/gpu/build.sh limits what the device tool carries, the
// tracked files and DIR.tgz: a folder over 64 MiB that packs small builds (it failed,
// blaming "DIR.tgz with the tracked files", though the folder does not travel), and a
// DIR.tgz over the limit fails naming the folder's largest file.
func TestGPUBuildSize(t *testing.T) {
	for _, tool := range []string{"bash", "git", "tar", "gzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" { // .ci/run installs them
				t.Fatalf("no %s", tool)
			}
			t.Skipf("no %s", tool)
		}
	}
	if testing.Short() {
		t.Skip("packs 70 MiB")
	}
	tmp := t.TempDir()
	goStub := filepath.Join(tmp, "go")
	if err := os.WriteFile(goStub, []byte(stubGo), 0o755); err != nil {
		t.Fatal(err)
	}
	build := func(mib int, bytes string, env ...string) (string, error) {
		dir := filepath.Join(t.TempDir(), "gpu-check")
		cmd := exec.Command("bash", filepath.Join("..", "..", "tools", "gpu", "build.sh"), dir)
		cmd.Env = append(os.Environ(), append([]string{"GO=" + goStub, "PTX_BASE=", fmt.Sprintf("STUB_MIB=%d", mib), "STUB_BYTES=" + bytes}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// 70 MiB of zeros: a folder over 64 MiB, a DIR.tgz of a few KiB.
	if out, err := build(70, "/dev/zero"); err != nil {
		t.Errorf("a 70 MiB folder that packs into a few KiB: %v\n%s", err, out)
	}
	// 4 MiB that do not compress, over a limit of the tracked files and 2 MiB.
	tracked, err := exec.Command("bash", "-c", "cd ../.. && git ls-files -z | xargs -0 stat -c %s | awk '{ n += $1 } END { print n + 0 }'").Output()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	fmt.Sscan(string(tracked), &n)
	limit := fmt.Sprintf("MAX_MIB=%d", n/1048576+2)
	out, err := build(4, "/dev/urandom", limit)
	if err == nil || !strings.Contains(out, "more than "+limit) || !strings.Contains(out, "kernels-cuda.test 4.0 MiB") {
		t.Errorf("a DIR.tgz over the limit: %v, want a failure naming the limit and kernels-cuda.test 4.0 MiB:\n%s", err, out)
	}
}
