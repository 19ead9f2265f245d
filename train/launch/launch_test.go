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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/freeport"
	"gptkit/train/dist"
)

// workerEnv makes the test binary a fake rank: it runs the behaviour the variable
// names (see fakeRank).
const workerEnv = "GPTKIT_LAUNCH_TEST_RANK"

func TestMain(m *testing.M) {
	if port := os.Getenv(launcherEnv); port != "" {
		os.Exit(launcherChild(port))
	}
	if mode := os.Getenv(workerEnv); mode == "dist" {
		os.Exit(distRank())
	}
	if mode := os.Getenv(workerEnv); mode == "distfail1" {
		os.Exit(distFailRank())
	}
	if mode := os.Getenv(workerEnv); mode == "distkill1" || mode == "distpanic1" {
		os.Exit(distKillRank(mode == "distpanic1"))
	}
	if mode := os.Getenv(workerEnv); mode == "distkillpanicstop" {
		os.Exit(distKillPanicStopRank())
	}
	if mode := os.Getenv(workerEnv); mode == "distpanicheld" {
		os.Exit(distPanicHeldRank())
	}
	if mode := os.Getenv(workerEnv); mode == "diststop1" || mode == "diststopresume1" {
		os.Exit(distStopRank(mode == "diststopresume1"))
	}
	if mode := os.Getenv(workerEnv); mode != "" {
		os.Exit(fakeRank(mode))
	}
	os.Exit(m.Run())
}

// fakeRank: "env" prints its place; "fail1" fails on rank 1 (at restart 0 only
// with "fail1once"); "term" waits for SIGTERM; "peerint" exits 130 on rank 1 (an
// interrupt elsewhere) and waits on the others.
func fakeRank(mode string) int {
	rank := os.Getenv("RANK")
	restart := os.Getenv("TORCHELASTIC_RESTART_COUNT")
	fmt.Fprintf(os.Stderr, "hello from %s of %s (local %s of %s, node %s, restart %s, master %s:%s, token %t)\n", rank, os.Getenv("WORLD_SIZE"),
		os.Getenv("LOCAL_RANK"), os.Getenv("LOCAL_WORLD_SIZE"), os.Getenv("GROUP_RANK"), restart, os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT"),
		os.Getenv("GPTKIT_JOB_TOKEN") != "")
	fmt.Printf("stdout of %s\n", rank)
	switch mode {
	case "env":
		return 0
	case "peerint": // rank 1 stops as a rank does whose peer on another node was interrupted
		if rank == "1" {
			return 130
		}
		mode = "term"
	case "fail1slow": // rank 1 fails; the others take a while to stop
		if rank == "1" {
			fmt.Fprintln(os.Stderr, "rank 1 gives up: out of cheese")
			return 3
		}
		mode = "slowsave"
	case "panic1": // rank 1 crashes as a Go program does: a panic, then the stacks
		if rank == "1" {
			go func() { panic("out of cheese") }()
			time.Sleep(time.Minute)
		}
		mode = "term"
	case "kill1": // rank 1 is SIGKILLed from outside (the OOM killer)
		if rank == "1" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		mode = "term"
	case "fail1", "fail1once":
		if rank == "1" && (mode == "fail1" || restart == "0") {
			fmt.Fprintln(os.Stderr, "rank 1 gives up: out of cheese")
			return 3
		}
		if rank == "1" {
			return 0
		}
		if mode == "fail1once" && restart != "0" {
			return 0
		}
		mode = "term"
	}
	switch mode {
	case "slowsave": // SIGTERM starts a checkpoint that takes a while
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		time.Sleep(1500 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "saved")
		return 130
	case "term":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "got %v\n", s)
			return 1
		case <-time.After(time.Minute):
			return 9
		}
	}
	return 2
}

// freePort is a port for a job's MASTER_PORT, outside the kernel's ephemeral range
// (internal/freeport).
func freePort(t *testing.T) int {
	p, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testConfig(t *testing.T, mode string, nproc int) (Config, *syncBuffer, *syncBuffer) {
	var stdout, stderr syncBuffer
	return Config{NProcPerNode: nproc, MasterPort: freePort(t), Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), workerEnv+"="+mode), Stdout: &stdout, Stderr: &stderr, StopGrace: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&stderr, nil))}, &stdout, &stderr
}

// TestRunEnvAndOutput: every rank gets torchrun's variables and the token; stderr
// lines carry the rank; rank 0's stdout passes through as it is.
func TestRunEnvAndOutput(t *testing.T) {
	cfg, stdout, stderr := testConfig(t, "env", 3)
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for r := range 3 {
		want := fmt.Sprintf("[rank %d] hello from %d of 3 (local %d of 3, node 0, restart 0, master 127.0.0.1:%d, token true)", r, r, r, cfg.MasterPort)
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if stdout.String() != "stdout of 0\n" || !strings.Contains(stderr.String(), "[rank 2] stdout of 2") {
		t.Errorf("stdout %q; stderr %s", stdout, stderr)
	}
}

// TestFirstFailureStopsOthers: when a rank fails the launcher stops the others
// and reports the failed rank with its last words.
func TestFirstFailureStopsOthers(t *testing.T) {
	cfg, _, stderr := testConfig(t, "fail1", 3)
	start := time.Now()
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 3: rank 1 gives up: out of cheese") {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
	// (The others were stopped: they would wait a minute.)
}

// TestFailureNamesPanic: a rank that crashes with a Go panic is reported with the
// panic's line, not with the last line of the stack dump that follows it.
func TestFailureNamesPanic(t *testing.T) {
	cfg, _, stderr := testConfig(t, "panic1", 2)
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 2: panic: out of cheese") {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "[rank 1] goroutine ") {
		t.Errorf("the stack dump is not in the log:\n%s", stderr)
	}
}

// TestFailureNamesOOMKill: a rank killed by SIGKILL from outside the launcher, as
// the OOM killer does, is reported with where to look.
func TestFailureNamesOOMKill(t *testing.T) {
	cfg, _, stderr := testConfig(t, "kill1", 2)
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 was killed by signal 9 (killed) from outside the launcher: the kernel's OOM killer") {
		t.Fatalf("%v\n%s", err, stderr)
	}
}

// distKillRank joins the group; rank 1 then is SIGKILLed (or, with panics, crashes
// with a Go panic), leaving behind a child that holds its stderr, so that the store's
// "rank 1 disconnected" reaches the launcher well before rank 1's exit
// (pipeDrainWait). The others wait for the stop.
func distKillRank(panics bool) int {
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
	if place.Rank == 1 {
		child := exec.Command("sleep", "10")
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "level=INFO msg=step step=7")
		if panics {
			go func() { panic("out of cheese") }()
			time.Sleep(time.Minute)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	select {
	case <-c.Aborted():
		fmt.Fprintln(os.Stderr, c.Err())
		return 1
	case <-time.After(time.Minute):
		return 9
	}
}

// distStopRank joins the group; rank 1 then stops itself (SIGSTOP), as a hung rank
// falls silent: the store fails the group on its missing heartbeats. With resumes, a
// child continues it a second after the heartbeat timeout: it reads the group's
// failure and exits with status 1, as a train rank does.
func distStopRank(resumes bool) int {
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
	if place.Rank == 1 {
		if resumes {
			exec.Command("sh", "-c", fmt.Sprintf("sleep %g; kill -CONT %d", (pauseHeartbeat+time.Second).Seconds(), os.Getpid())).Start()
		}
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
	select {
	case <-c.Aborted():
		fmt.Fprintln(os.Stderr, c.Err())
		return 1
	case <-time.After(time.Minute):
		return 9
	}
}

// TestKilledRankNextStep: a rank SIGKILLed from outside fails the job with the next
// step named (rerun, or --max-restarts), whether the launcher learns it from the
// rank's exit or first from the store ("rank 1 disconnected"); its last line is
// not given as the reason.
func TestKilledRankNextStep(t *testing.T) {
	const next = "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"
	defer func(d time.Duration) { exitGrace = d }(exitGrace)
	exitGrace = 200 * time.Millisecond // its exit comes after pipeDrainWait: the store's word stays
	cfg, _, stderr := testConfig(t, "distkill1", 2)
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 disconnected from the store") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("store first: %v, want rank 1 named and %q\n%s", err, next, stderr)
	}
	exitGrace = pipeDrainWait + 5*time.Second // its exit comes within it (after pipeDrainWait): its status is the word
	cfg, _, stderr = testConfig(t, "distkill1", 2)
	err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 was killed by signal 9 (killed) from outside the launcher") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("store first, then the exit: %v, want rank 1's kill and %q\n%s", err, next, stderr)
	}
	cfg, _, stderr = testConfig(t, "kill1", 2)
	err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "or a user or scheduler killed it (its last line: hello from 1 of 2") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("exit first: %v, want its last line as such and %q\n%s", err, next, stderr)
	}
	cfg, _, _ = testConfig(t, "fail1", 2)
	if err := Run(context.Background(), cfg); err == nil || strings.Contains(err.Error(), "rerun") {
		t.Errorf("a rank's own failure: %v, want no rerun hint", err)
	}
	cfg, _, _ = testConfig(t, "distfail1", 2)
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "rank 1 failed: out of cheese") || strings.Contains(err.Error(), "rerun") {
		t.Errorf("a rank's own failure through the store: %v, want it and no rerun hint", err)
	}
}

// TestCrashedRankNoRerun: a rank that crashes on its own (a Go panic) without a word
// to the store gets no rerun hint, though the store's "disconnected" (a failure a
// restart can cure) reached the launcher before its exit (a child holds its stderr:
// its exit comes after pipeDrainWait): its exit status, which comes within
// exitGrace, is the word, with the panic's line.
func TestCrashedRankNoRerun(t *testing.T) {
	defer func(d time.Duration) { exitGrace = d }(exitGrace)
	exitGrace = pipeDrainWait + 5*time.Second // its exit comes after pipeDrainWait: room for a slow machine
	cfg, _, stderr := testConfig(t, "distpanic1", 2)
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 exited with status 2: panic: out of cheese") || strings.Contains(err.Error(), "rerun") {
		t.Errorf("%v, want rank 1's panic and no rerun hint\n%s", err, stderr)
	}
}

// TestHungRankNextStep: a group the store fails on a rank's missing heartbeats (hung
// or stopped) names the same next step as a killed rank: a restart can cure it.
func TestHungRankNextStep(t *testing.T) {
	const next = "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"
	cfg, _, stderr := testConfig(t, "diststop1", 2)
	cfg.HeartbeatInterval, cfg.HeartbeatTimeout = 200*time.Millisecond, pauseHeartbeat
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 sent no heartbeat") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("%v, want rank 1's missing heartbeats and %q\n%s", err, next, stderr)
	}
}

// TestHungRankResumesNextStep: a rank the store blamed for its missing heartbeats
// that resumes within exitGrace and exits on the group's failure it then reads
// (status 1) keeps the rerun hint: its exit is no crash of its own.
func TestHungRankResumesNextStep(t *testing.T) {
	const next = "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"
	cfg, _, stderr := testConfig(t, "diststopresume1", 2)
	cfg.HeartbeatInterval, cfg.HeartbeatTimeout = 200*time.Millisecond, pauseHeartbeat
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "rank 1 sent no heartbeat") || !strings.HasSuffix(err.Error(), next) {
		t.Errorf("%v, want rank 1's missing heartbeats and %q\n%s", err, next, stderr)
	}
}

// TestMaxRestarts: a group that fails once finishes with one restart, and gives
// up without.
func TestMaxRestarts(t *testing.T) {
	cfg, _, stderr := testConfig(t, "fail1once", 2)
	cfg.MaxRestarts = 1
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "restart 1, master") || !strings.Contains(stderr.String(), "restarting the group") {
		t.Errorf("no restart:\n%s", stderr)
	}
	cfg, _, stderr = testConfig(t, "fail1", 2)
	cfg.MaxRestarts = 1
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no restarts left after 1") {
		t.Errorf("%v\n%s", err, stderr)
	}
}

// TestSignalForwarded: a signal reaches every rank once; a second one kills. SIGQUIT
// (Ctrl-\) reaches them as SIGTERM, torchrun's meaning of it: a rank not watching for
// SIGQUIT (one still starting) would dump its goroutines' stacks and die without a
// checkpoint.
func TestSignalForwarded(t *testing.T) {
	for _, tc := range []struct {
		sent syscall.Signal
		got  string // as the test rank prints it
	}{{syscall.SIGINT, "interrupt"}, {syscall.SIGQUIT, "terminated"}} {
		t.Run(tc.sent.String(), func(t *testing.T) {
			cfg, _, stderr := testConfig(t, "term", 2)
			sigs := make(chan os.Signal, 1)
			cfg.Signals = sigs
			go func() {
				for !strings.Contains(stderr.String(), "hello from 1") || !strings.Contains(stderr.String(), "hello from 0") {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // the ranks' signal handlers are up
				sigs <- tc.sent
			}()
			if err := Run(context.Background(), cfg); !errors.Is(err, ErrInterrupted) {
				t.Fatalf("%v\n%s", err, stderr)
			}
			for r := range 2 {
				if !strings.Contains(stderr.String(), fmt.Sprintf("[rank %d] got %s", r, tc.got)) {
					t.Errorf("rank %d did not get a %s:\n%s", r, tc.got, stderr)
				}
			}
		})
	}
}

func TestParseHostfile(t *testing.T) {
	hosts, err := ParseHostfile([]byte("# nodes\nnode1 slots=4\n\n10.0.0.2  slots=4 # second\nuser@node3 slots=4\n"), "hf")
	if err != nil || len(hosts) != 3 || hosts[1] != (Host{"10.0.0.2", 4}) || masterHost(hosts[2].Name) != "node3" {
		t.Fatalf("%v %v", hosts, err)
	}
	for _, bad := range []string{"", "node1", "node1 slots=x", "node1 slots=0", "-oProxyCommand=x slots=1", "a;b slots=1",
		"n1 slots=2\nn2 slots=4", "n1 slots=1\nn1 slots=1", "n1 slots=1\nu@n1 slots=1", "[::1] slots=1\n::1 slots=1", "n1 gpus=2", "n1 slots=1 extra"} {
		if _, err := ParseHostfile([]byte(bad), "hf"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// What is wrong is said ("hf:1: 1 fields", "3 fields").
	for bad, want := range map[string]string{
		"n1":                     `launch: hf:1: host n1 has no slots=N (want "HOST slots=N")`,
		"n1 slots=2 max_slots=4": `launch: hf:1: "max_slots=4" after slots=2: a line is a host and its slots, nothing else (want "HOST slots=N")`,
		"n1 gpus=2":              `launch: hf:1: "gpus=2" is not slots=N (want "HOST slots=N")`,
		"n1 slots=":              `launch: hf:1: slots "": want an integer in [1,1024] (want "HOST slots=N")`,
		"n1 slots = 2":           `launch: hf:1: "slots = 2" is not slots=N (want "HOST slots=N")`,
		"n1 slots=2x":            `launch: hf:1: slots "2x": want an integer in [1,1024] (want "HOST slots=N")`,
	} {
		if _, err := ParseHostfile([]byte(bad), "hf"); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", bad, err, want)
		}
	}
}

// TestShellQuote: a quoted command line reaches the program word for word through
// a real shell, whatever the words hold.
func TestShellQuote(t *testing.T) {
	words := []string{"plain", "with space", "it's", `"dq"`, "$(touch /nonexistent/x)", "`id`", "a;b", "a&&b", "*", "~", "new\nline", `back\slash`, "", "$HOME", "--flag=v"}
	out, err := exec.Command("sh", "-c", shellCommand(append([]string{"printf", "%s\\0"}, words...))).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("%d words came back, want %d: %q", len(got), len(words), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: %q came back as %q", i, words[i], got[i])
		}
	}
}

// FuzzParseHostfile: never panics; every accepted host is safe to hand ssh.
func FuzzParseHostfile(f *testing.F) {
	for _, s := range []string{"node1 slots=4\nnode2 slots=4", "# c\n", "a slots=1 # x", "-x slots=1", "a\tslots=2", "a slots=99999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hosts, err := ParseHostfile(data, "fuzz")
		if err != nil {
			return
		}
		for _, h := range hosts {
			if checkHost(h.Name) != nil || h.Slots < 1 || h.Slots != hosts[0].Slots || shellQuote(h.Name) != h.Name && !strings.ContainsAny(h.Name, "[]") {
				t.Fatalf("accepted %+v from %q", h, data)
			}
		}
	})
}

// TestSignalsWhileRanksExit: signals that arrive while ranks are exiting (a second
// Ctrl-C, the kill timer) stop the ones still running without reading what the
// goroutines waiting for the others write (a data race under -race).
func TestSignalsWhileRanksExit(t *testing.T) {
	for range 3 {
		cfg, _, stderr := testConfig(t, "env", 4)
		sigs := make(chan os.Signal, 1)
		cfg.Signals = sigs
		done := make(chan struct{})
		go func() {
			for {
				select {
				case sigs <- syscall.SIGCONT: // harmless to a rank, forwarded as any signal
				case <-done:
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		err := Run(context.Background(), cfg)
		close(done)
		if err != nil && !errors.Is(err, ErrInterrupted) {
			t.Fatalf("%v\n%s", err, stderr)
		}
	}
}

// TestPeerInterruptIsNoFailure: a rank that stopped because the job was interrupted
// elsewhere (another node's launcher got the signal: status 130) stops this node's
// ranks without a restart, and the launcher reports an interrupt, not a failure.
func TestPeerInterruptIsNoFailure(t *testing.T) {
	cfg, _, stderr := testConfig(t, "peerint", 2)
	cfg.MaxRestarts = 2
	if err := Run(context.Background(), cfg); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("%v, want ErrInterrupted\n%s", err, stderr)
	}
	// (Rank 0, which would wait a minute, was stopped: Run returned.)
	if strings.Contains(stderr.String(), "restarting") || !strings.Contains(stderr.String(), "stopping this node's ranks") {
		t.Errorf("want this node's ranks stopped and no restart:\n%s", stderr)
	}
}

// TestStopWaitsForSave: when the launcher that started this one goes away (a hostfile
// job interrupted), the ranks are sent SIGTERM and given the time their checkpoint
// takes: they were killed StopGrace after, cutting a large model's save.
func TestStopWaitsForSave(t *testing.T) {
	cfg, _, stderr := testConfig(t, "slowsave", 2)
	cfg.StopGrace = 300 * time.Millisecond
	stop := make(chan struct{})
	cfg.Stop = stop
	go func() {
		for !strings.Contains(stderr.String(), "hello from 1") || !strings.Contains(stderr.String(), "hello from 0") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		close(stop)
	}()
	if err := Run(context.Background(), cfg); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if n := strings.Count(stderr.String(), "saved"); n != 2 || strings.Contains(stderr.String(), "killing") {
		t.Fatalf("%d ranks saved, want 2 and none killed:\n%s", n, stderr)
	}
}
