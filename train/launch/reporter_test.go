package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/train/dist"
)

// heldPanicEnv names the rank that panics in mode distpanicheld; heldMarkEnv the
// file whose creation lets its exit reach the launcher.
const (
	heldPanicEnv = "GPTKIT_LAUNCH_TEST_PANIC_RANK"
	heldMarkEnv  = "GPTKIT_LAUNCH_TEST_MARK"
	// heldSignalEnv, when set (ABRT, SEGV...), makes that rank die of that signal
	// instead, after a last line, as a C library's abort() does (it becomes a
	// shell that prints the line and signals itself).
	heldSignalEnv = "GPTKIT_LAUNCH_TEST_SIGNAL"
	// heldOnceEnv, when set, makes the rank crash only in the first round: after a
	// restart every rank ends well.
	heldOnceEnv = "GPTKIT_LAUNCH_TEST_ONCE"
)

// distPanicHeldRank joins the group; the rank heldPanicEnv names then crashes with
// a Go panic, leaving behind a child that holds its stderr until the file
// heldMarkEnv names is there (a minute at most), so that its exit reaches the
// launcher only then (with pipeDrainWait longer). The others exit with status 1 on
// the group's failure ("rank N disconnected"), as train's ranks do.
func distPanicHeldRank() int {
	place, _, err := dist.Detect(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := dist.Init(context.Background(), place, dist.Options{Token: os.Getenv(dist.EnvToken), Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(heldOnceEnv) != "" && place.RestartCount > 0 {
		fmt.Fprintln(os.Stderr, "restarted: ending well")
		c.Close(nil)
		return 0
	}
	if strconv.Itoa(place.Rank) == os.Getenv(heldPanicEnv) {
		child := exec.Command("sh", "-c", `i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`, os.Getenv(heldMarkEnv))
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if sig := os.Getenv(heldSignalEnv); sig != "" {
			// The shell is this rank crashing: the launcher's SIGTERM on the stop
			// that rank 0's exit starts must not end it first (ignored signals stay
			// ignored across exec).
			signal.Ignore(syscall.SIGTERM)
			err := syscall.Exec("/bin/sh", []string{"sh", "-c", `echo "nccl: ncclCommInitRank: out of cheese" >&2; kill -` + sig + ` $$`}, os.Environ())
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() { panic("out of cheese") }()
		time.Sleep(time.Minute)
	}
	select {
	case <-c.Aborted():
		fmt.Fprintln(os.Stderr, c.Err())
		return 1
	case <-time.After(time.Minute):
		return 9
	}
}

// holdAbort is a Config.testEvents that holds the store's abort back until the
// launcher has taken a rank's exit for the failure (its log says so in stderr), as
// on a loaded machine, then creates mark unless it is "" (the panicked rank's exit
// may come: after the abort, or with exitFirst before it, once the launcher has
// taken it, or 10s).
func holdAbort(stderr *syncBuffer, mark string, exitFirst bool) func(<-chan dist.Event) <-chan dist.Event {
	waitFor := func(text string, d time.Duration) {
		for deadline := time.Now().Add(d); !strings.Contains(stderr.String(), text) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return func(in <-chan dist.Event) <-chan dist.Event {
		out := make(chan dist.Event, 64)
		go func() {
			defer close(out)
			for ev := range in {
				if ev.Kind == dist.EventAbort && mark != "" {
					waitFor("a rank failed; stopping the others", time.Minute)
					if !exitFirst {
						out <- ev
					}
					os.WriteFile(mark, nil, 0o644)
					if exitFirst {
						waitFor("a rank crashed on its own", 10*time.Second)
						out <- ev
					}
					continue
				} else if ev.Kind == dist.EventAbort {
					waitFor("a rank failed; stopping the others", time.Minute)
				}
				out <- ev
			}
		}()
		return out
	}
}

// TestReportedFailureThenOwnCrash: a rank that panics (the store: "rank 1
// disconnected") while another rank of its node reads that failure and exits with
// status 1 before the launcher hears the store's abort: the panic is the failure,
// with no rerun hint, not the other rank's "rank 0 exited with status 1: ... rank 1
// disconnected" (the launcher, already stopping, ignored the abort and took the
// panicked rank's exit for part of the stop; cmd/train TestLaunchNodesRankPanics
// failed so in about 1 run of 12), whether the abort or the panicked rank's exit
// comes next. With two nodes, the other node's launcher names it too
// (reportExit), also where its own ranks read the failure and all exited first (it
// waits for the store's abort, then for the word of the panicked rank's launcher).
func TestReportedFailureThenOwnCrash(t *testing.T) {
	defer func(d, r time.Duration) { pipeDrainWait, remoteExitGrace = d, r }(pipeDrainWait, remoteExitGrace)
	pipeDrainWait = time.Minute // the panicked rank's exit comes once the mark is there
	remoteExitGrace = 30 * time.Second

	for _, exitFirst := range []bool{false, true} {
		mark := filepath.Join(t.TempDir(), "mark")
		cfg, _, stderr := testConfig(t, "distpanicheld", 2)
		cfg.Env = append(cfg.Env, heldPanicEnv+"=1", heldMarkEnv+"="+mark)
		cfg.testEvents = holdAbort(stderr, mark, exitFirst)
		err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
			t.Errorf("one node, exit first %t: %v, want rank 1's panic and no rerun hint\n%s", exitFirst, err, stderr)
		}

		mark = filepath.Join(t.TempDir(), "mark")
		errs, stderrs := runTwoNodesWith(t, "distpanicheld", 2, func(node int, cfg *Config, stderr *syncBuffer) {
			cfg.Env = append(cfg.Env, heldPanicEnv+"=3", heldMarkEnv+"="+mark)
			if node == 1 {
				cfg.testEvents = holdAbort(stderr, mark, exitFirst)
			} else {
				cfg.testEvents = holdAbort(stderr, "", false)
			}
		})
		for node, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "rank 3 on node 1 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
				t.Errorf("two nodes, exit first %t, node %d: %v, want rank 3's panic on node 1 and no rerun hint\n%s", exitFirst, node, err, stderrs[node])
			}
		}
	}
}

// TestReportedFailureThenOwnSignal: as TestReportedFailureThenOwnCrash, a rank
// that dies of SIGABRT (a C library's abort(), e.g. inside CUDA or NCCL) or SIGSEGV:
// its death is the failure, naming the signal and its last line, not the other
// rank's "rank 0 exited with status 1: ... rank 1 disconnected" (ownCrash counted
// only a Go crash's status 2 and SIGKILL).
func TestReportedFailureThenOwnSignal(t *testing.T) {
	defer func(d time.Duration) { pipeDrainWait = d }(pipeDrainWait)
	pipeDrainWait = time.Minute // the crashed rank's exit comes once the mark is there

	for _, c := range []struct{ sig, want string }{
		{"ABRT", "rank 1 was killed by signal 6 (SIGABRT): nccl: ncclCommInitRank: out of cheese"},
		{"SEGV", "rank 1 was killed by signal 11 (SIGSEGV): nccl: ncclCommInitRank: out of cheese"},
	} {
		for _, exitFirst := range []bool{false, true} {
			mark := filepath.Join(t.TempDir(), "mark")
			cfg, _, stderr := testConfig(t, "distpanicheld", 2)
			cfg.Env = append(cfg.Env, heldPanicEnv+"=1", heldMarkEnv+"="+mark, heldSignalEnv+"="+c.sig)
			cfg.testEvents = holdAbort(stderr, mark, exitFirst)
			err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "rerun") {
				t.Errorf("SIG%s, exit first %t: %v, want %q and no rerun hint\n%s", c.sig, exitFirst, err, c.want, stderr)
			}
		}
	}
}

// TestOwnCrashSignals: a death by SIGABRT, SIGSEGV, SIGBUS, SIGILL or SIGFPE is the
// rank's own crash, as a SIGKILL from outside is; by SIGTERM, SIGINT, SIGHUP or
// SIGQUIT (the launcher's stop) it is not, nor a SIGKILL the launcher sent.
func TestOwnCrashSignals(t *testing.T) {
	die := func(sig string) exit {
		err := exec.Command("sh", "-c", "kill -"+sig+" $$").Run()
		if err == nil {
			t.Fatalf("sh killed by SIG%s exited 0", sig)
		}
		return exit{rank: 1, err: err, last: "its last line"}
	}
	for _, sig := range []string{"ABRT", "SEGV", "BUS", "ILL", "FPE", "KILL"} {
		if ex := die(sig); !ownCrash(ex, false) {
			t.Errorf("SIG%s: not its own crash", sig)
		}
	}
	if ex := die("KILL"); ownCrash(ex, true) {
		t.Error("a SIGKILL the launcher sent: its own crash")
	}
	for _, sig := range []string{"TERM", "INT", "HUP", "QUIT"} {
		if ex := die(sig); ownCrash(ex, false) {
			t.Errorf("SIG%s: its own crash", sig)
		}
	}
	if got, want := describeExit(die("ABRT"), ""), "rank 1 was killed by signal 6 (SIGABRT): its last line"; got != want {
		t.Errorf("describeExit: %q, want %q", got, want)
	}
	if got, want := describeExit(die("TERM"), ""), "rank 1 was killed by signal 15 (terminated) (its last line: its last line)"; got != want {
		t.Errorf("describeExit: %q, want %q", got, want)
	}
}

// holdStart is a Config.testEvents that holds the store's start of the generation
// back until the launcher has taken a rank's exit for the failure (its log says so
// in stderr), as on a loaded machine.
func holdStart(stderr *syncBuffer) func(<-chan dist.Event) <-chan dist.Event {
	return func(in <-chan dist.Event) <-chan dist.Event {
		out := make(chan dist.Event, 64)
		go func() {
			defer close(out)
			for ev := range in {
				if ev.Kind == dist.EventStart {
					for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "a rank failed; stopping the others") && time.Now().Before(deadline); {
						time.Sleep(10 * time.Millisecond)
					}
				}
				out <- ev
			}
		}()
		return out
	}
}

// TestCrashBeforeStartSeenReported: a rank on node 1 that panics right after its
// generation started, before its launcher heard of the start: node 1's launcher
// tells the others how it ended once the start comes (it told nobody, as it knew
// no generation, and they waited remoteExitGrace, 5s, for its word, then said the
// store's "disconnected" and to rerun, unless node 1's giving up came first: with
// --max-restarts it never does).
func TestCrashBeforeStartSeenReported(t *testing.T) {
	defer func(r time.Duration) { remoteExitGrace = r }(remoteExitGrace)
	remoteExitGrace = 30 * time.Second
	mark := filepath.Join(t.TempDir(), "mark")
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	errs, stderrs := runTwoNodesWith(t, "distpanicheld", 1, func(node int, cfg *Config, stderr *syncBuffer) {
		cfg.Env = append(cfg.Env, heldPanicEnv+"=1", heldMarkEnv+"="+mark)
		if node == 1 {
			cfg.testEvents = holdStart(stderr)
		}
	})
	for node, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 on node 1 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
			t.Errorf("node %d: %v, want rank 1's panic and no rerun hint\n%s", node, err, stderrs[node])
		}
	}
	// Node 0 heard node 1's word on the exit (as the store's abort, or after it),
	// not only node 1's giving up, which a restart would not send.
	if got := stderrs[0].String(); !heardWord(got, "rank 1 on node 1 exited with status 2: panic: out of cheese") {
		t.Errorf("node 0 had no word from node 1's launcher on rank 1's end:\n%s", got)
	}
	if took := time.Since(start); took > remoteExitGrace {
		t.Errorf("took %s: node 0 waited out remoteExitGrace", took)
	}
}

// distKillPanicStopRank joins the group of three; rank 2 then is SIGKILLed (the OOM
// killer), a child holding its stderr a while; rank 1 panics on the launcher's
// SIGTERM; rank 0 exits with status 1 on the group's failure ("rank 2
// disconnected"), as train's ranks do.
func distKillPanicStopRank() int {
	place, _, err := dist.Detect(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	c, err := dist.Init(context.Background(), place, dist.Options{Token: os.Getenv(dist.EnvToken), Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch place.Rank {
	case 2:
		child := exec.Command("sleep", "2")
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case 1:
		select {
		case <-sig:
			panic("panicked while stopping")
		case <-time.After(time.Minute):
			return 9
		}
	}
	select {
	case <-c.Aborted():
		fmt.Fprintln(os.Stderr, c.Err())
		return 1
	case <-time.After(time.Minute):
		return 9
	}
}

// TestPanicOnStopAfterOOMKill: a rank killed from outside (the OOM killer), whose
// failure another rank reads and exits with status 1 on before the launcher hears
// the store's abort; the launcher stops the others, and one panics handling that
// SIGTERM: the kill is the failure, with the rerun hint, not the panic (which took
// over at once as "crashed on its own", the abort naming rank 2 then ignored, and
// got the rerun hint of rank 2's kill).
func TestPanicOnStopAfterOOMKill(t *testing.T) {
	const next = "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"
	cfg, _, stderr := testConfig(t, "distkillpanicstop", 3)
	cfg.testEvents = func(in <-chan dist.Event) <-chan dist.Event {
		out := make(chan dist.Event, 64)
		go func() {
			defer close(out)
			for ev := range in {
				if ev.Kind == dist.EventAbort {
					// After rank 0's exit and rank 1's panic on the stop.
					for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "panicked while stopping") && time.Now().Before(deadline); {
						time.Sleep(10 * time.Millisecond)
					}
					time.Sleep(500 * time.Millisecond)
				}
				out <- ev
			}
		}()
		return out
	}
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 2 was killed by signal 9 (killed) from outside the launcher") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("%v, want rank 2's kill from outside and %q\n%s", err, next, stderr)
	}
}

// TestStaleStartAfterRestart: a round that ended before its launcher heard its
// generation's start (node 1's rank panicked at once; the store's start and abort
// came after the restart): the next round takes neither for its own, and the job,
// fine after the restart, succeeds on both nodes (node 1's launcher took generation
// 0's start and its abort, "rank 1 disconnected", for the new round's, SIGTERMed its
// healthy rank and failed with "(no restarts left after 1)").
func TestStaleStartAfterRestart(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	errs, stderrs := runTwoNodesWith(t, "distpanicheld", 1, func(node int, cfg *Config, stderr *syncBuffer) {
		cfg.Env = append(cfg.Env, heldPanicEnv+"=1", heldMarkEnv+"="+mark, heldOnceEnv+"=1")
		cfg.MaxRestarts = 1
		if node == 1 {
			// Every event from the first start on waits for the restart.
			cfg.testEvents = func(in <-chan dist.Event) <-chan dist.Event {
				out := make(chan dist.Event, 64)
				go func() {
					defer close(out)
					held := false
					for ev := range in {
						if ev.Kind == dist.EventStart && !held {
							held = true
							for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "restarting the group") && time.Now().Before(deadline); {
								time.Sleep(10 * time.Millisecond)
							}
						}
						out <- ev
					}
				}()
				return out
			}
		}
	})
	for node, err := range errs {
		if err != nil {
			t.Errorf("node %d: %v, want success after the restart\n%s", node, err, stderrs[node])
		}
	}
}
