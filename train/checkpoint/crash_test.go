package checkpoint

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gptkit/internal/miniotest"
)

// crashPoints are where the child is killed (SIGKILL) inside Save(step 3, keep 2) over
// checkpoints 1 and 2, and whether step 3 is published by then.
var crashPoints = []struct {
	point     string
	published bool
}{
	{"mid-file", false},        // half of model.bin written
	{"file-written", false},    // model.bin complete, state.json not yet
	{"before-manifest", false}, // all files written, no checkpoint.json
	{"before-publish", false},  // local: checkpoint.json written, not renamed; S3: before its upload
	{"published", true},        // renamed (local, ROOT not yet fsynced) / checkpoint.json uploaded
	{"prune-renamed", true},    // removing step 1: moved aside / its checkpoint.json deleted
}

// TestKillDuringSave kills a process in the middle of Save at each crash point: Latest
// then returns the previous checkpoint (or the new one, once published), it verifies,
// and the next Save cleans up what the crash left.
func TestKillDuringSave(t *testing.T) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			for _, c := range crashPoints {
				t.Run(c.point, func(t *testing.T) {
					var root string
					var env []string
					if kind == "local" {
						root = filepath.Join(t.TempDir(), "checkpoints")
					} else {
						srv := miniotest.Shared(t)
						srv.Setenv(t)
						env = srv.Env()
						root = "s3://" + srv.NewBucket(t) + "/run/checkpoints"
					}
					saveSteps(t, root, 2, 1, 2)
					killChildAt(t, c.point, root, env)

					dir, step, err := Latest(ctx, root)
					if err != nil {
						t.Fatal(err)
					}
					want := int64(2)
					if c.published {
						want = 3
					}
					if step != want {
						t.Fatalf("Latest after a kill at %s: step %d, want %d", c.point, step, want)
					}
					checkStep(t, dir, step)
					if c.published {
						checkStep(t, strings.TrimSuffix(dir, "3")+"2", 2)
					}

					// The next save (keep 2) removes the leftovers and the oldest.
					saveSteps(t, root, 2, 4)
					complete, incomplete := steps(t, root)
					if len(complete) != 2 || complete[0] != 4 || complete[1] != want || len(incomplete) != 0 {
						t.Fatalf("after the next save: complete %v (want [4 %d]), incomplete %v", complete, want, incomplete)
					}
					if kind == "local" {
						des, _ := os.ReadDir(root)
						for _, de := range des {
							if strings.HasPrefix(de.Name(), ".") {
								t.Errorf("leftover %s after the next save", de.Name())
							}
						}
					}
				})
			}
		})
	}
}

// killChildAt runs crashChild in a child process, waits until it reports that it stopped
// at point, and kills it with SIGKILL.
func killChildAt(t *testing.T, point, root string, env []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), envCrashPoint+"="+point, envCrashRoot+"="+root)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		if line != "stopped at "+point {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child said %q, want %q", line, "stopped at "+point)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not reach %s within a minute", point)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
}
