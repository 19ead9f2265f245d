package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/train"
)

// TestLaunchInterruptWithStderrGone: Ctrl-C at a launcher whose output went through
// a pipe whose reader the same Ctrl-C ended (train ... 2>&1 | tee log: tee is in the
// terminal's foreground group too) stops the ranks in order, with a checkpoint, and
// exits 1 (the launcher's next line hit the closed pipe and SIGPIPE killed it, its
// ranks with it by their parent-death signal: the checkpoint was lost).
func TestLaunchInterruptWithStderrGone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "dp")
	interruptWithStderrGone(t, out, append(dpArgs(data, out, 4, 100000, 0), "--nproc-per-node", "2", "--master-port", freePort(t)), "[rank 0] ", "[rank 1] ")
}

// TestInterruptWithStderrGone: the same for a run of one process (it was killed by
// SIGPIPE at its line saying that it saves a checkpoint, without one).
func TestInterruptWithStderrGone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "one")
	interruptWithStderrGone(t, out, dpArgs(data, out, 4, 100000, 0), "", "")
}

// interruptWithStderrGone runs train with args, its stderr a pipe read until a line
// of a step after stepPrefix and a line after otherPrefix, then closes the pipe,
// sends SIGINT and checks that the run stops in order with a checkpoint in out.
func interruptWithStderrGone(t *testing.T, out string, args []string, stepPrefix, otherPrefix string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer cmd.Process.Kill()
	var seen []string
	sc := bufio.NewScanner(r)
	for stepped, rank1 := false, false; !stepped || !rank1; {
		if !sc.Scan() {
			t.Fatalf("the launcher's stderr ended before the ranks trained:\n%s", strings.Join(seen, "\n"))
		}
		line := sc.Text()
		seen = append(seen, line)
		stepped = stepped || strings.HasPrefix(line, stepPrefix) && strings.Contains(line, "msg=step")
		rank1 = rank1 || strings.HasPrefix(line, otherPrefix)
	}
	r.Close() // tee is gone
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the launcher did not end within a minute of the Ctrl-C")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("after Ctrl-C with stderr's reader gone: %v, want status 1 (an orderly stop)", err)
	}
	if ckpts, _ := filepath.Glob(filepath.Join(out, train.CheckpointsDir, "step_*")); len(ckpts) == 0 {
		t.Errorf("no checkpoint after the Ctrl-C in %s", out)
	}
}
