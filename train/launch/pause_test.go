package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/train/dist"
)

// launcherEnv makes the test binary a launcher of two "dist" ranks (see
// launcherChild) on the port the variable holds.
const launcherEnv = "GPTKIT_LAUNCH_TEST_LAUNCHER"

// pauseHeartbeat is the heartbeat timeout of the launcher child and its ranks.
const pauseHeartbeat = 2 * time.Second

// launcherChild runs a launcher of two ranks that join a real group (distRank) and
// prints its outcome on stderr.
func launcherChild(port string) int {
	p, _ := strconv.Atoi(port)
	cfg := Config{NProcPerNode: 2, MasterPort: p, Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), workerEnv+"=dist", launcherEnv+"="), Stdout: os.Stdout, Stderr: os.Stderr, StopGrace: 5 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, HeartbeatTimeout: pauseHeartbeat, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	err := Run(context.Background(), cfg)
	fmt.Fprintf(os.Stderr, "launcher outcome: %v\n", err)
	return 0
}

// distRank joins the group the launcher's store gathers and waits for it to fail.
func distRank() int {
	place, _, err := dist.Detect(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := dist.Init(context.Background(), place, dist.Options{Token: os.Getenv(dist.EnvToken), HeartbeatInterval: 200 * time.Millisecond,
		HeartbeatTimeout: pauseHeartbeat, Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "rank joined")
	select {
	case <-c.Aborted():
		fmt.Fprintln(os.Stderr, c.Err())
		return 1
	case <-time.After(time.Minute):
		return 9
	}
}

// distFailRank joins the group; rank 1 then fails on its own as train's ranks do: it
// reports its error to the store (Comm.Close) and, on its way out, says it last
// unless a stop signal comes first (then "interrupted", as train's rank said). The
// others wait for the stop.
func distFailRank() int {
	place, _, err := dist.Detect(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c, err := dist.Init(context.Background(), place, dist.Options{Token: os.Getenv(dist.EnvToken), Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if place.Rank != 1 {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "got %v\n", s)
			return dist.ExitInterrupted
		case <-time.After(time.Minute):
			return 9
		}
	}
	c.Close(errors.New("out of cheese"))
	select {
	case s := <-sig: // (the exit path of a real rank takes a while: a checkpoint's close, NCCL's)
		fmt.Fprintf(os.Stderr, "rank 1: interrupted (%v)\n", s)
	case <-time.After(500 * time.Millisecond):
		fmt.Fprintln(os.Stderr, "rank 1 gives up: out of cheese")
	}
	return 1
}

// TestFailingRankIsNotStopped: a rank that reported its own failure to the store is
// left to exit with it: its last line is its error. The launcher sent it the SIGTERM
// that stops the others too, and train's rank, stopped on its way out, said
// "interrupted" instead (1 run in 5 of train --nproc-per-node 2 with a missing --data).
func TestFailingRankIsNotStopped(t *testing.T) {
	cfg, _, stderr := testConfig(t, "distfail1", 3)
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 failed: out of cheese") {
		t.Fatalf("%v, want rank 1's failure\n%s", err, stderr)
	}
	got := stderr.String()
	if !strings.Contains(got, "[rank 1] rank 1 gives up: out of cheese") || strings.Contains(got, "[rank 1] rank 1: interrupted") {
		t.Errorf("rank 1's last line is not its own error:\n%s", got)
	}
	for _, r := range []int{0, 2} {
		if !strings.Contains(got, fmt.Sprintf("[rank %d] got terminated", r)) {
			t.Errorf("rank %d was not stopped:\n%s", r, got)
		}
	}
}

// TestLauncherStopped: a launcher stopped (SIGSTOP) for longer than the heartbeat
// timeout and then continued names its own stop as the cause, not "rank 0" (issue 15,
// item 12).
func TestLauncherStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a launcher for seconds")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), launcherEnv+"="+strconv.Itoa(freePort(t)))
	var stderr syncBuffer
	cmd.Stderr, cmd.Stdout = &stderr, &bytes.Buffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(time.Minute)
	for strings.Count(stderr.String(), "rank joined") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the ranks never joined:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(3 * pauseHeartbeat)
	cmd.Process.Signal(syscall.SIGCONT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the launcher did not end:\n%s", stderr.String())
	}
	out := stderr.String()
	i := strings.LastIndex(out, "launcher outcome: ")
	if i < 0 {
		t.Fatalf("no outcome:\n%s", out)
	}
	outcome := out[i:]
	t.Log(outcome)
	if !strings.Contains(outcome, "the launcher of node 0 did not run for") || strings.HasPrefix(outcome, "launcher outcome: launch: rank 0") {
		t.Errorf("the outcome does not name the launcher's stop:\n%s\nstderr:\n%s", outcome, out)
	}
}
