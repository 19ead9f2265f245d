package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/train/dist"
)

// rerunHint is the next step a failure a restart can cure ends with.
const rerunHint = "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"

// runTwoNodes runs two node launchers of nproc ranks each on 127.0.0.1 (node 0
// hosting the store), their ranks in mode, and returns each launcher's outcome and
// stderr.
func runTwoNodes(t *testing.T, mode string, nproc int) ([2]error, [2]*syncBuffer) {
	t.Helper()
	return runTwoNodesWith(t, mode, nproc, nil)
}

// runTwoNodesWith is runTwoNodes with tweak (when not nil) changing each node's
// Config before it runs.
func runTwoNodesWith(t *testing.T, mode string, nproc int, tweak func(node int, cfg *Config, stderr *syncBuffer)) ([2]error, [2]*syncBuffer) {
	t.Helper()
	port := freePort(t)
	var errs [2]error
	var stderrs [2]*syncBuffer
	done := make(chan int, 2)
	for node := range 2 {
		cfg, _, stderr := testConfig(t, mode, nproc)
		cfg.NNodes, cfg.NodeRank, cfg.MasterAddr, cfg.MasterPort, cfg.Token = 2, node, "127.0.0.1", port, "two-nodes"
		cfg.Timeout = time.Minute
		stderrs[node] = stderr
		if tweak != nil {
			tweak(node, &cfg, stderr)
		}
		go func() {
			errs[node] = Run(context.Background(), cfg)
			done <- node
		}()
	}
	for range 2 {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the launchers did not end:\nnode 0:\n%s\nnode 1:\n%s", stderrs[0], stderrs[1])
		}
	}
	return errs, stderrs
}

// TestRemoteCrashedRankNoRerun: a rank on node 1 that crashes on its own (a Go panic,
// which the store sees as "rank 1 disconnected", a failure a restart can cure) is
// named as such by both launchers, node 0's (which the user watches, and whose
// status a scheduler sees) included, with no rerun hint: node 1's launcher, which saw
// the rank's exit, tells the store (dist.EventExit). Node 0's named the store's
// "disconnected" and "rerun the same command". A rank killed from outside keeps the
// hint on both. The same for a rank on node 0, whose launcher hosts the store.
func TestRemoteCrashedRankNoRerun(t *testing.T) {
	defer func(d, r time.Duration) { exitGrace, remoteExitGrace = d, r }(exitGrace, remoteExitGrace)
	exitGrace = pipeDrainWait + 5*time.Second // its exit comes after pipeDrainWait: room for a slow machine
	remoteExitGrace = exitGrace + 5*time.Second

	errs, stderrs := runTwoNodes(t, "distpanic1", 1)
	for node, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 on node 1 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
			t.Errorf("panic, node %d: %v, want rank 1's panic on node 1 and no rerun hint\n%s", node, err, stderrs[node])
		}
	}
	// Node 0 says it from node 1's word on the exit, not from node 1's giving up,
	// which comes only once node 1's ranks have all stopped and reads the same
	// (giveUpReason).
	if !heardWord(stderrs[0].String(), "rank 1 on node 1 exited with status 2: panic: out of cheese") {
		t.Errorf("panic, node 0: no word from node 1's launcher on rank 1's end:\n%s", stderrs[0])
	}

	errs, stderrs = runTwoNodes(t, "distkill1", 1)
	for node, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 on node 1 was killed by signal 9 (killed) from outside the launcher") || !strings.HasSuffix(err.Error(), rerunHint) {
			t.Errorf("kill, node %d: %v, want rank 1's kill on node 1 and %q\n%s", node, err, rerunHint, stderrs[node])
		}
	}

	// Rank 1 on node 0, whose launcher hosts the store: node 1's hears of it too.
	errs, stderrs = runTwoNodes(t, "distpanic1", 2)
	for node, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 on node 0 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
			t.Errorf("panic on node 0, node %d: %v, want rank 1's panic on node 0 and no rerun hint\n%s", node, err, stderrs[node])
		}
	}
	if !heardWord(stderrs[1].String(), "rank 1 on node 0 exited with status 2: panic: out of cheese") {
		t.Errorf("panic on node 0, node 1: no word from node 0's launcher on rank 1's end:\n%s", stderrs[1])
	}
}

// heardWord reports whether a launcher's log shows it took want, a rank's end as
// the launcher of the rank's node said it, from that launcher's word on the exit
// (dist.EventExit, or the store's abort that carries it): not only from that
// launcher's giving up ("the job is over", the store's "job failed"), which says the
// same words (giveUpReason adds no "node N: " to a reason naming node N).
func heardWord(stderr, want string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, `msg="the rank the store named has exited"`) && strings.Contains(line, `failure="`+want) ||
			strings.Contains(line, `msg="the group failed`) && strings.Contains(line, `reason="`+want) {
			return true
		}
	}
	return false
}

// TestRemoteExitWordBounded: node 0's launcher waits for the word of a blamed rank's
// launcher for remoteExitGrace at most: with that launcher gone too (here rank 1 runs
// with no launcher and is SIGKILLed), the store's "disconnected" stands, with the
// rerun hint, once the wait is over. The wait's start is logged (what it waits for,
// how long at most): it was a silent pause.
func TestRemoteExitWordBounded(t *testing.T) {
	defer func(r time.Duration) { remoteExitGrace = r }(remoteExitGrace)
	remoteExitGrace = 2 * time.Second
	cfg, _, stderr := testConfig(t, "dist", 1)
	cfg.NNodes, cfg.MasterAddr, cfg.Token, cfg.Timeout = 2, "127.0.0.1", "two-nodes", time.Minute
	rank1 := exec.Command(os.Args[0], "-test.run=^$")
	rank1.Env = append(os.Environ(), workerEnv+"=dist", "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
		"GROUP_RANK=1", "GROUP_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(cfg.MasterPort),
		dist.EnvToken+"="+cfg.Token, dist.EnvLauncherStore+"=1")
	var rank1Err syncBuffer
	rank1.Stderr = &rank1Err
	if err := rank1.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { rank1.Process.Kill(); rank1.Wait() }()
	killed := make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(time.Minute); !strings.Contains(rank1Err.String(), "rank joined") && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		killed <- time.Now()
		rank1.Process.Signal(syscall.SIGKILL)
	}()
	err := Run(context.Background(), cfg)
	took := time.Since(<-killed)
	if err == nil || !strings.Contains(err.Error(), "rank 1 disconnected from the store") || !strings.HasSuffix(err.Error(), rerunHint) {
		t.Errorf("%v, want the store's word and %q\n%s", err, rerunHint, stderr)
	}
	// The wait is a pause on node 0: it says what it waits for, and how long at most,
	// once, when it starts.
	if n := strings.Count(stderr.String(), `msg="waiting for the launcher of the rank the store named to say how it ended`); n != 1 ||
		!strings.Contains(stderr.String(), "rank=1 node=1 at_most=2s") {
		t.Errorf("%d lines of the wait's start, want 1 naming rank 1, node 1 and at most 2s:\n%s", n, stderr)
	}
	if !strings.Contains(stderr.String(), "no word from the launcher of the rank the store named") {
		t.Errorf("no word of the wait's end:\n%s", stderr)
	}
	if took < remoteExitGrace || took > remoteExitGrace+5*time.Second {
		t.Errorf("Run ended %s after the kill, want about remoteExitGrace (%s)", took, remoteExitGrace)
	}
}

// TestGiveUpNamesNodeOnce: node 1's launcher gives the job up on a rank of its own
// that failed (before any generation started, so no word on its exit goes first):
// node 0's launcher names node 1 once, "rank 1 on node 1 exited ...", not "node 1:
// rank 1 on node 1 exited ...". A reason that names no node keeps the "node 1: ".
func TestGiveUpNamesNodeOnce(t *testing.T) {
	defer func(d time.Duration) { exitGrace = d }(exitGrace)
	exitGrace = 200 * time.Millisecond // the wait for a start that never comes (the fake ranks join no group)
	errs, stderrs := runTwoNodes(t, "fail1", 1)
	const want = "launch: rank 1 on node 1 exited with status 3: rank 1 gives up: out of cheese"
	for node, err := range errs {
		if err == nil || err.Error() != want {
			t.Errorf("node %d: %v, want %q\n%s", node, err, want, stderrs[node])
		}
	}
	for _, c := range []struct {
		node         int
		reason, want string
	}{
		{1, "rank 3 on node 1 exited with status 2: panic: boom", "rank 3 on node 1 exited with status 2: panic: boom"},
		{1, "rank 3 did not start: no such file", "node 1: rank 3 did not start: no such file"},
		{1, "rank 30 on node 10 exited with status 2", "node 1: rank 30 on node 10 exited with status 2"},
		{0, "rank 1 disconnected from the store (no restarts left after 2)", "node 0: rank 1 disconnected from the store (no restarts left after 2)"},
	} {
		if got := giveUpReason(c.node, c.reason); got != c.want {
			t.Errorf("giveUpReason(%d, %q) = %q, want %q", c.node, c.reason, got, c.want)
		}
	}
}

// TestStalledStoreWriteDoesNotBlock: a launcher's word to the store on a rank's exit
// (reportExit) that the store does not take (stopped, hung: the write blocks up to
// its timeout) held the launcher's loop: the other ranks got no stop signal, and no
// signal or exit was heard, until the write ended. Here node 0's launcher of a
// two-node job (node 1's never comes; a start is given it) has rank 1 panic while
// its word on it is held: rank 0 is stopped (and gone) meanwhile.
func TestStalledStoreWriteDoesNotBlock(t *testing.T) {
	cfg, _, stderr := testConfig(t, "panic1", 2)
	cfg.NNodes, cfg.MasterAddr, cfg.Token, cfg.Timeout = 2, "127.0.0.1", "two-nodes", time.Minute
	cfg.testEvents = func(events <-chan dist.Event) <-chan dist.Event {
		out := make(chan dist.Event, 1)
		out <- dist.Event{Kind: dist.EventStart, Gen: 0}
		go func() {
			defer close(out)
			for ev := range events {
				out <- ev
			}
		}()
		return out
	}
	var once sync.Once
	held, stopped := false, false
	cfg.testStoreWrite = func() {
		once.Do(func() {
			held = true
			// Rank 0 is gone (stopped, and reaped by the goroutine that waits for
			// it, not by the loop): it waits a minute for the stop otherwise.
			m := regexp.MustCompile(`rank=0 local_rank=0 pid=(\d+)`).FindStringSubmatch(stderr.String())
			if m == nil {
				return
			}
			pid, _ := strconv.Atoi(m[1])
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if syscall.Kill(pid, 0) == syscall.ESRCH {
					stopped = true
					return
				}
			}
		})
	}
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 on node 0 exited with status 2: panic: out of cheese") {
		t.Errorf("%v, want rank 1's panic\n%s", err, stderr)
	}
	if !held {
		t.Fatalf("no word to the store on rank 1's exit\n%s", stderr)
	}
	if !stopped {
		t.Errorf("rank 0 was not stopped while the launcher's word to the store was held\n%s", stderr)
	}
}

// TestDocsStateWaits: the docs give the launcher's waits after a failure as they are,
// and their sum, the pause a user can see before the last line: a status-1 exit's
// wait for the store's abort (exitGrace), then the wait for another node's
// launcher's word (remoteExitGrace). They gave 3 s and 5 s apart, never 8 s.
func TestDocsStateWaits(t *testing.T) {
	secs := func(d time.Duration) string { return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s" }
	for _, doc := range []string{"failure-behaviour.md", "data-parallel.md"} {
		b, err := os.ReadFile("../../docs/" + doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		for _, want := range []string{"up to " + secs(exitGrace), "up to " + secs(remoteExitGrace), "up to " + secs(exitGrace+remoteExitGrace) + " in all"} {
			if !strings.Contains(text, want) {
				t.Errorf("docs/%s does not say %q", doc, want)
			}
		}
	}
}

// TestStartFailureNamesNode: a rank of node 1 whose program cannot start is named
// "rank 1 on node 1 did not start: ..." by both launchers, as an exit is; it was
// "rank 1 did not start", which named no node.
func TestStartFailureNamesNode(t *testing.T) {
	defer func(d time.Duration) { exitGrace = d }(exitGrace)
	exitGrace = 200 * time.Millisecond
	missing := filepath.Join(t.TempDir(), "no-train")
	errs, stderrs := runTwoNodesWith(t, "term", 1, func(node int, cfg *Config, _ *syncBuffer) {
		if node == 1 {
			cfg.Program = missing
		}
	})
	const want = "rank 1 on node 1 did not start: "
	for node, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "node 1: rank 1") {
			t.Errorf("node %d: %v, want %q\n%s", node, err, want, stderrs[node])
		}
	}
}
