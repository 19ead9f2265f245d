package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	// In the second step, of seconds: the first Ctrl-C waits for its end.
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond) // the watch of the second is up
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != dist.ExitInterrupted || !strings.Contains(stderr.String(), "second interrupt") {
		t.Fatalf("after a second Ctrl-C: %v after %v, want status %d at once: %s", err, time.Since(sent), dist.ExitInterrupted, stderr.String())
	}
}
