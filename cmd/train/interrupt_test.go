package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/train"
	"gptkit/train/dist"
)

// lockedBuffer is a bytes.Buffer safe to read while a process writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecondInterruptExitsAtOnce: Ctrl-C lets the step under way finish and saves a
// checkpoint; a second Ctrl-C during a long step ends the process at once with
// status 130 (it was ignored until the step and the save were done).
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Steps of seconds on one thread: a model far wider than the data needs.
	args := []string{"--data", data, "--out", out, "--device", "cpu", "--threads", "1", "--n-layer", "4", "--n-head", "4", "--n-embd", "256",
		"--block-size", "256", "--batch-size", "12", "--max-steps", "50", "--eval-steps", "0", "--cache-dir", out + "-cache"}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(stderr.String(), "msg=step"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish a step: %s", stderr.String())
		}
	}
	// In the second step, of seconds: the first Ctrl-C waits for its end, and says so.
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond) // the watch of the second is up
	if !strings.Contains(stderr.String(), "finishing the step under way and saving a checkpoint (Ctrl-C again exits at once") {
		t.Errorf("the first Ctrl-C said nothing: %s", stderr.String())
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != dist.ExitInterrupted || !strings.Contains(stderr.String(), "second interrupt") {
		t.Fatalf("after a second Ctrl-C: %v after %v, want status %d at once: %s", err, time.Since(sent), dist.ExitInterrupted, stderr.String())
	}
}

// TestHangupStopsInOrder: SIGHUP (the terminal or ssh session gone) stops a run as
// SIGTERM does, after the step under way and with a checkpoint (it ended the process
// where it stood); a run started with SIGHUP ignored (nohup) keeps running.
func TestHangupStopsInOrder(t *testing.T) {
	data, _ := makeCharDataset(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := func(out string, nohup bool, args []string) (*exec.Cmd, *lockedBuffer) {
		cmd := exec.Command(self, args...)
		if nohup {
			cmd = exec.Command("nohup", append([]string{self}, args...)...)
		}
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(stderr.String(), "msg=step"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the run did not finish a step: %s", stderr.String())
			}
		}
		cmd.Process.Signal(syscall.SIGHUP)
		return cmd, &stderr
	}

	// Steps of seconds: the hangup comes during the second.
	out := filepath.Join(t.TempDir(), "run")
	cmd, stderr := start(out, false, []string{"--data", data, "--out", out, "--device", "cpu", "--threads", "1", "--n-layer", "4", "--n-head", "4", "--n-embd", "256",
		"--block-size", "256", "--batch-size", "12", "--max-steps", "50", "--eval-steps", "0", "--cache-dir", out + "-cache"})
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "train: interrupted") {
		t.Fatalf("after SIGHUP: %v, want status 1 and an orderly stop: %s", err, stderr.String())
	}
	if ckpts, _ := filepath.Glob(filepath.Join(out, train.CheckpointsDir, "step_*")); len(ckpts) == 0 {
		t.Errorf("no checkpoint after SIGHUP in %s: %s", out, stderr.String())
	}

	if _, err := exec.LookPath("nohup"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no nohup (coreutils) on the CI machine: %v", err)
		}
		t.Skip("no nohup here")
	}
	out2 := filepath.Join(t.TempDir(), "run")
	cmd, stderr = start(out2, true, tinyArgs(data, out2, "300"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("under nohup, after SIGHUP: %v, want the run to go on and finish: %s", err, stderr.String())
	}
}

// TestQuitStopsInOrder: SIGQUIT (Ctrl-\) stops a run, and a launcher with its ranks,
// as SIGTERM does (torchrun's meaning): the step under way finishes, a checkpoint is
// saved, the last line says "interrupted" and the status is 1. Go's own handling
// dumped every goroutine's stack and ended the process (the ranks: with status 2)
// without a checkpoint.
func TestQuitStopsInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	for _, tc := range []struct {
		name                    string
		launcher                bool
		stepPrefix, otherPrefix string
	}{{"one", false, "", ""}, {"launcher", true, "[rank 0] ", "[rank 1] "}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := dpArgs(data, out, 4, 100000, 0)
			if tc.launcher {
				args = append(args, "--nproc-per-node", "2", "--master-port", freePort(t))
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			ready := func() bool {
				stepped, other := false, false
				for line := range strings.SplitSeq(stderr.String(), "\n") {
					stepped = stepped || strings.HasPrefix(line, tc.stepPrefix) && strings.Contains(line, "msg=step")
					other = other || strings.HasPrefix(line, tc.otherPrefix)
				}
				return stepped && other
			}
			for deadline := time.Now().Add(60 * time.Second); !ready(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the run did not finish a step: %s", stderr.String())
				}
			}
			cmd.Process.Signal(syscall.SIGQUIT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("still running a minute after SIGQUIT: %s", stderr.String())
			}
			got := stderr.String()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("after SIGQUIT: %v, want status 1 (an orderly stop): %s", err, got)
			}
			if strings.Contains(got, "goroutine ") || strings.Contains(got, "SIGQUIT: quit") {
				t.Errorf("a stack dump reached stderr: %s", got)
			}
			want := interruptedLine
			if tc.launcher { // (it names the checkpoint the ranks left)
				want = "train: interrupted (rerun the same command to continue from the newest checkpoint, " + filepath.Join(out, train.CheckpointsDir, "step_")
			}
			if last := strings.TrimSpace(got[strings.LastIndex(strings.TrimRight(got, "\n"), "\n")+1:]); !strings.HasPrefix(last, want) {
				t.Errorf("last line %q, want %q", last, want)
			}
			if ckpts, _ := filepath.Glob(filepath.Join(out, train.CheckpointsDir, "step_*")); len(ckpts) == 0 {
				t.Errorf("no checkpoint after SIGQUIT in %s: %s", out, got)
			}
		})
	}
}

// TestInterruptBeforeFirstStep: Ctrl-C while a run starts (here: while it opens its
// data) saves nothing, and says so: the first Ctrl-C's word said it was
// "saving a checkpoint", and the last line to "continue from the newest
// checkpoint", of which there was none (the trainer's "no step was taken" was
// dropped). A run resumed from a checkpoint and stopped before its first step names
// that checkpoint as where a rerun continues.
func TestInterruptBeforeFirstStep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDatasetOf(t, charText(64<<10))
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"--data", data, "--out", out, "--device", "cpu", "--threads", "1", "--n-layer", "2", "--n-head", "2", "--n-embd", "64",
		"--block-size", "64", "--batch-size", "4", "--max-steps", "50", "--eval-steps", "0", "--cache-dir", out + "-cache"}
	// The data is on an S3 endpoint that takes the first request and never answers
	// it: the Ctrl-C comes while the run opens its data, whatever the machine's speed.
	asked := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		<-r.Context().Done()
	}))
	defer srv.Close()
	childArgs := slices.Clone(args)
	childArgs[slices.Index(childArgs, "--data")+1] = "s3://bucket/data"
	childArgs = append(childArgs, "--s3-endpoint", srv.URL)
	interrupt := func(t *testing.T, args []string, launcher bool) {
		t.Helper()
		asked = make(chan struct{})
		once = sync.Once{}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), mainEnv+"=1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		select {
		case <-asked:
		case <-time.After(60 * time.Second):
			t.Fatalf("the run asked the S3 endpoint for nothing in 60s: %s", stderr.String())
		}
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		got := stderr.String()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("after Ctrl-C: %v, want status 1: %s", err, got)
		}
		if ckpts, _ := filepath.Glob(filepath.Join(out, train.CheckpointsDir, "step_*")); len(ckpts) != 0 {
			t.Fatalf("checkpoints %v of a run stopped before its first step: %s", ckpts, got)
		}
		if !launcher && (strings.Contains(got, "saving a checkpoint") || !strings.Contains(got, "stopping before the first step: nothing to save")) {
			t.Errorf("the first Ctrl-C's word, where nothing is saved: %s", got)
		}
		last := strings.TrimSpace(got[strings.LastIndex(strings.TrimRight(got, "\n"), "\n")+1:])
		if !strings.Contains(last, "nothing was saved") || strings.Contains(last, "continue from") {
			t.Errorf("last line %q, want that nothing was saved and a rerun starts over", last)
		}
	}
	interrupt(t, childArgs, false)
	// Through the launcher (2 ranks): its last line said to continue from the
	// newest checkpoint, of which there was none.
	interrupt(t, append(slices.Clone(childArgs), "--nproc-per-node", "2", "--master-port", freePort(t)), true)

	// Resumed from a checkpoint, then stopped before a step: a rerun continues from it.
	maxSteps := slices.Index(args, "--max-steps") + 1
	args[maxSteps] = "2"
	if code, _, errOut := runTrain(t, args...); code != 0 {
		t.Fatalf("2 steps: exit %d: %s", code, errOut)
	}
	args[maxSteps] = "50"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	if code := run(ctx, args, strings.NewReader(""), io.Discard, &buf); code != 1 {
		t.Fatalf("interrupted: exit %d: %s", code, buf.String())
	}
	ckpt := filepath.Join(out, train.CheckpointsDir, "step_00000002")
	want := "nothing was saved (rerun the same command to continue from the newest checkpoint, " + ckpt + ")"
	if got := buf.String(); !strings.Contains(got, want) {
		t.Errorf("resumed, then interrupted: %s; want %q", got, want)
	}
}

// TestLauncherInterruptedLineResumePath: node 0's launcher stopped before any
// checkpoint was written under out, on a run given --resume PATH: a rerun of the same
// command starts from PATH again, not from the beginning.
func TestLauncherInterruptedLineResumePath(t *testing.T) {
	ctx := context.Background()
	cfg := train.Default()
	cfg.Out = t.TempDir()
	if line := launcherInterruptedLine(ctx, &cfg, 0); !strings.Contains(line, "nothing was saved") || !strings.Contains(line, "from the beginning") {
		t.Errorf("--resume %s, no checkpoint: %q", cfg.Resume, line)
	}
	cfg.Resume = filepath.Join(t.TempDir(), "run1", "checkpoints", "step_00000100")
	line := launcherInterruptedLine(ctx, &cfg, 0)
	if !strings.Contains(line, "nothing was saved") || !strings.Contains(line, cfg.Resume) || strings.Contains(line, "from the beginning") {
		t.Errorf("--resume PATH, no checkpoint under out: %q, want it to name %s, where a rerun starts", line, cfg.Resume)
	}
}
