package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/internal/cli"
	"gptkit/internal/freeport"
	"gptkit/kernels/cuda"
	"gptkit/train"
)

// mainEnv makes the test binary the train command (the launcher starts
// os.Executable, which under test is this binary).
const mainEnv = "GPTKIT_TRAIN_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		cli.Main(run)
	}
	os.Exit(m.Run())
}

// dpArgs is a small data-parallel run on the cpu kernels: batch samples per rank,
// steps steps, a checkpoint every ckpt steps.
func dpArgs(data, out string, batch, steps, ckpt int) []string {
	return []string{"--data", data, "--out", out, "--device", "cpu", "--threads", "1", "--n-layer", "2", "--n-head", "2", "--n-embd", "32",
		"--block-size", "16", "--batch-size", fmt.Sprint(batch), "--max-steps", fmt.Sprint(steps), "--lr", "1e-2", "--warmup-steps", "2",
		"--lr-decay-steps", fmt.Sprint(steps), "--eval-every", "0", "--eval-steps", fmt.Sprint(8 / batch), "--checkpoint-every", fmt.Sprint(ckpt),
		"--cache-dir", out + "-cache", "--dropout", "0"}
}

// singleRun trains dpArgs in this process (one rank): the reference run of a
// data-parallel test. It returns the run directory.
func singleRun(t *testing.T, data string, batch, steps, ckpt int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "single")
	if code, _, stderr := runTrain(t, dpArgs(data, out, batch, steps, ckpt)...); code != 0 {
		t.Fatalf("single: %s", stderr)
	}
	return out
}

type procResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// trainProc runs the train command as a process (this test binary) with extra
// environment, bounded by limit.
func trainProc(t *testing.T, limit time.Duration, env []string, args ...string) procResult {
	t.Helper()
	return command(t, limit, env, os.Args[0], args...)
}

func command(t *testing.T, limit time.Duration, env []string, prog string, args ...string) procResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := procResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s %v: still running after %s: %v\nstderr:\n%s", prog, args, limit, err, r.stderr)
	}
	return r
}

// freePort is a port for a job's MASTER_PORT, outside the kernel's ephemeral range
// (internal/freeport).
func freePort(t *testing.T) string {
	p, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(p)
}

// closeLosses checks two runs' losses agree within a relative tolerance.
func closeLosses(t *testing.T, got, want []train.Metrics, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d metric lines, want %d", len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i].Loss-want[i].Loss) / math.Abs(want[i].Loss); d > tol || got[i].Step != want[i].Step {
			t.Errorf("step %d: loss %.9g, want %.9g (relative difference %.2g)", got[i].Step, got[i].Loss, want[i].Loss, d)
		}
	}
}

// TestLaunchNProcPerNode: --nproc-per-node 2 trains the same loss curve as one
// process with the same global batch; stdout is rank 0's summary alone, and the
// ranks' stderr lines carry their rank.
func TestLaunchNProcPerNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	single := singleRun(t, data, 8, 20, 0)
	out := filepath.Join(t.TempDir(), "dp")
	r := trainProc(t, time.Minute, nil, append(dpArgs(data, out, 4, 20, 0), "--nproc-per-node", "2", "--master-port", freePort(t))...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	sum := parseSummary(t, r.stdout)
	if sum.Step != 20 || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, want := range []string{"[rank 0] ", "[rank 1] ", "msg=\"data parallel\""} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	closeLosses(t, readMetrics(t, out), readMetrics(t, single), 1e-5)
}

// TestRanksByHand: ranks started one by one with --rank and --world-size (and the
// job token in the environment) find each other.
func TestRanksByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "dp")
	port := freePort(t)
	env := []string{"GPTKIT_JOB_TOKEN=s3cret", "MASTER_ADDR=127.0.0.1"}
	var wg sync.WaitGroup
	results := make([]procResult, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[r] = trainProc(t, time.Minute, env, append(dpArgs(data, out, 4, 6, 0), "--rank", fmt.Sprint(r), "--world-size", "2", "--master-port", port)...)
		}()
	}
	wg.Wait()
	for r, res := range results {
		if res.code != 0 {
			t.Fatalf("rank %d: exit %d:\n%s", r, res.code, res.stderr)
		}
	}
	if parseSummary(t, results[0].stdout).Step != 6 || results[1].stdout != "" {
		t.Errorf("stdout: %q and %q", results[0].stdout, results[1].stdout)
	}

}

// TestLaunchNodesRankPanics: two node launchers (--nnodes 2 on 127.0.0.1) and a
// rank of node 1 that panics mid-step: both end with that panic, "rank 3 on node 1
// exited with status 2: panic: ...", and no hint to rerun (node 0's said "rank 3
// disconnected from the store" and to rerun the same command, as the store saw it).
func TestLaunchNodesRankPanics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "panicked")
	port := freePort(t)
	env := []string{faultEnv + "=panic:3:20", "GPTKIT_JOB_TOKEN=nodes-panic-" + port}
	res := make([]procResult, 2)
	var wg sync.WaitGroup
	for node := range 2 {
		wg.Go(func() {
			res[node] = trainProc(t, 2*time.Minute, env, append(dpArgs(data, out, 4, 12, 4), "--nproc-per-node", "2", "--nnodes", "2",
				"--node-rank", fmt.Sprint(node), "--master-addr", "127.0.0.1", "--master-port", port)...)
		})
	}
	wg.Wait()
	for node, r := range res {
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		last := lines[len(lines)-1]
		t.Logf("node %d: %s", node, last)
		if r.code != 1 || !strings.Contains(last, "rank 3 on node 1 exited with status 2: panic: "+faultEnv+": injected panic") || strings.Contains(last, "rerun") {
			t.Errorf("node %d: exit %d, last line %q; want 1, rank 3's panic and no rerun hint:\n%s", node, r.code, last, r.stderr)
		}
	}
}

// TestLaunchRankKilled: a rank killed in the middle of a step brings the whole
// job down within seconds, with a message naming it; with --max-restarts 1 the job
// finishes from the last checkpoint with the metrics of an uninterrupted run.
func TestLaunchRankKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	straight := filepath.Join(t.TempDir(), "straight")
	if r := trainProc(t, time.Minute, nil, append(dpArgs(data, straight, 4, 12, 4), "--nproc-per-node", "2", "--master-port", freePort(t))...); r.code != 0 {
		t.Fatalf("uninterrupted: exit %d:\n%s", r.code, r.stderr)
	}
	// Rank 1's 40th collective is in step 7 or so (a few per step): after the checkpoint of step 4.
	fault := []string{faultEnv + "=kill:1:40"}

	out := filepath.Join(t.TempDir(), "killed")
	r := trainProc(t, 2*time.Minute, fault, append(dpArgs(data, out, 4, 12, 4), "--nproc-per-node", "2", "--master-port", freePort(t))...)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if r.code != 1 || !strings.Contains(last, "rank 1 was killed by signal 9") && !strings.Contains(last, "rank 1 disconnected") {
		t.Fatalf("exit %d, last line %q; want 1 and rank 1 named:\n%s", r.code, last, r.stderr)
	}
	if r.took > 60*time.Second {
		t.Errorf("the job took %s to stop", r.took)
	}
	if !strings.Contains(r.stderr, "[rank 0] train: dist: rank 1 disconnected") {
		t.Errorf("rank 0 did not say rank 1 disconnected:\n%s", r.stderr)
	}
	t.Logf("stopped after %s: %s", r.took.Round(time.Millisecond), last)

	out = filepath.Join(t.TempDir(), "restarted")
	r = trainProc(t, 2*time.Minute, fault, append(dpArgs(data, out, 4, 12, 4), "--nproc-per-node", "2", "--master-port", freePort(t), "--max-restarts", "1")...)
	if r.code != 0 || !strings.Contains(r.stderr, "restarting the group") {
		t.Fatalf("with a restart: exit %d:\n%s", r.code, r.stderr)
	}
	sum := parseSummary(t, r.stdout)
	if sum.Resumed == "" || sum.Step != 12 {
		t.Errorf("summary %+v: want resumed to step 12", sum)
	}
	got, want := readMetrics(t, out), readMetrics(t, straight)
	for i := range want {
		g, w := got[i], want[i]
		g.TokensPerS, w.TokensPerS, g.SamplesPerS, w.SamplesPerS, g.TFLOPS, w.TFLOPS, g.MFU, w.MFU = 0, 0, 0, 0, 0, 0, 0, 0
		g.MemoryMetrics, w.MemoryMetrics = train.MemoryMetrics{}, train.MemoryMetrics{} // the world size changes the padding and ZeRO-1 shards
		if (g.ValLoss == nil) != (w.ValLoss == nil) || g.ValLoss != nil && *g.ValLoss != *w.ValLoss {
			t.Errorf("step %d: val_loss %v, want %v", w.Step, g.ValLoss, w.ValLoss)
		}
		g.ValLoss, w.ValLoss = nil, nil
		if g != w {
			t.Errorf("step %d: %+v, want %+v", w.Step, g, w)
		}
	}
}

// TestLaunchFailingRankSaysItsError: when a rank fails on its own (a --data that does
// not exist: every rank fails so), the rank the launcher names ends with its own
// error, never "interrupted": the launcher's SIGTERM to the other ranks reached it
// too while it exited (about 1 run in 5 said "interrupted"). Run many times: a race.
func TestLaunchFailingRankSaysItsError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	missing := filepath.Join(t.TempDir(), "nodata")
	named := regexp.MustCompile(`^train: launch: rank (\d+) (failed|exited)`)
	for i := range 20 {
		r := trainProc(t, time.Minute, nil, "--data", missing, "--out", filepath.Join(t.TempDir(), "out"), "--device", "cpu",
			"--nproc-per-node", "2", "--master-port", freePort(t))
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		m := named.FindStringSubmatch(lines[len(lines)-1])
		if r.code != 1 || m == nil || !strings.Contains(lines[len(lines)-1], "no such dataset") {
			t.Fatalf("run %d: exit %d, last line %q; want 1 and a rank named with the missing data:\n%s", i, r.code, lines[len(lines)-1], r.stderr)
		}
		var last string
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, "[rank "+m[1]+"] "); ok {
				last = rest
			}
		}
		if !strings.HasPrefix(last, "train: open the data:") || !strings.Contains(last, "no such dataset") {
			t.Fatalf("run %d: rank %s, the one that failed, ended with %q, not its error:\n%s", i, m[1], last, r.stderr)
		}
	}
}

// TestLaunchOtherRankFailedNotInterrupted: a rank the launcher stops because another
// failed (an error of rank 1's) does not log "interrupted", as after a Ctrl-C (about
// 7 runs in 10 did, naming an older checkpoint as if saved on the stop): it says the
// group failed, naming the rank. Run a few times: whether the stop signal comes
// before rank 0's own collective fails is a race.
func TestLaunchOtherRankFailedNotInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	stopped := 0
	for i := range 5 {
		out := filepath.Join(t.TempDir(), "failed")
		r := trainProc(t, time.Minute, []string{faultEnv + "=error:1:40"}, append(dpArgs(data, out, 4, 12, 4), "--nproc-per-node", "2", "--master-port", freePort(t))...)
		if r.code != 1 || !strings.Contains(r.stderr, "train: launch: rank 1 failed: ") {
			t.Fatalf("run %d: exit %d; want 1 and rank 1's failure:\n%s", i, r.code, r.stderr)
		}
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "[rank 0] ") && strings.Contains(l, "msg=interrupted") {
				t.Fatalf("run %d: rank 0, stopped as rank 1 failed, said %q:\n%s", i, l, r.stderr)
			}
			if strings.HasPrefix(l, "[rank 0] ") && strings.Contains(l, `msg="stopped by the launcher: the group failed"`) {
				if !strings.Contains(l, "rank 1 failed: ") {
					t.Errorf("run %d: %q does not name rank 1", i, l)
				}
				stopped++
			}
		}
	}
	t.Logf("rank 0 was stopped by the launcher in %d runs of 5 (else its own collective failed first)", stopped)
}

// TestLaunchElasticResume: a job of 2 ranks stopped by a SIGTERM to one rank
// (the ranks stop together and checkpoint) resumes with --nproc-per-node 4 and
// half the per-rank batch (the same global batch): it continues the same sample
// sequence, so the losses match an uninterrupted single-process run's.
func TestLaunchElasticResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	single := singleRun(t, data, 8, 12, 0)
	out := filepath.Join(t.TempDir(), "elastic")
	r := trainProc(t, time.Minute, []string{faultEnv + "=term:1:20"}, append(dpArgs(data, out, 4, 12, 0), "--nproc-per-node", "2", "--master-port", freePort(t))...)
	if r.code != 1 || !strings.Contains(r.stderr, "train: interrupted") {
		t.Fatalf("interrupted on 2 ranks: exit %d, want 1 (interrupted):\n%s", r.code, r.stderr)
	}
	stopped := len(readMetrics(t, out))
	if stopped == 0 || stopped >= 12 {
		t.Fatalf("the interrupted run made %d steps of 12", stopped)
	}
	r = trainProc(t, time.Minute, nil, append(dpArgs(data, out, 2, 12, 0), "--nproc-per-node", "4", "--master-port", freePort(t))...)
	if r.code != 0 {
		t.Fatalf("resumed on 4 ranks: exit %d:\n%s", r.code, r.stderr)
	}
	if sum := parseSummary(t, r.stdout); sum.Resumed == "" || sum.Step != 12 {
		t.Errorf("summary %+v: want resumed to step 12", sum)
	}
	t.Logf("stopped after step %d on 2 ranks, finished on 4", stopped)
	closeLosses(t, readMetrics(t, out), readMetrics(t, single), 1e-5)
}

// TestLaunchRankHangs: a rank that stops (SIGSTOP: no heartbeats) is named within
// the heartbeat timeout, and a rank alive but stuck before a collective (its
// heartbeats go on) once --collective-timeout passes (not only at the 10-minute
// --dist-timeout); every process exits.
func TestLaunchRankHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	for _, tc := range []struct{ fault, flag, want string }{
		{"stop:2:30", "--heartbeat-timeout", "rank 2 sent no heartbeat"},
		{"hang:2:20", "--collective-timeout", "rank 2 did not arrive at collective #"},
	} {
		t.Run(strings.Split(tc.fault, ":")[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "hung")
			r := trainProc(t, 2*time.Minute, []string{faultEnv + "=" + tc.fault},
				append(dpArgs(data, out, 4, 12, 4), "--nproc-per-node", "3", "--master-port", freePort(t), tc.flag, "3s")...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d; want 1 and %q:\n%s", r.code, tc.want, r.stderr)
			}
			if r.took > 60*time.Second {
				t.Errorf("the job took %s to stop", r.took)
			}
			t.Logf("stopped after %s", r.took.Round(time.Millisecond))
		})
	}
}

func TestDropFlags(t *testing.T) {
	c := trainCommand()
	var d distFlags
	d.register(c.Flags)
	c.Flags.String("data", "", "")
	got := dropFlags(c.Flags, []string{"--data", "D", "--nproc-per-node", "2", "--nnodes=2", "--remote", "--master-port", "9", "--rank", "1", "--", "--ssh"}, launcherOnly)
	if want := []string{"--data", "D", "--rank", "1", "--", "--ssh"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRankThreads: the CPU kernels' default threads are shared among a node's ranks.
func TestRankThreads(t *testing.T) {
	cpus := runtime.NumCPU()
	slurm := func(perNode string) map[string]string {
		return map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NODELIST": "n[1-2]",
			"SLURM_STEP_TASKS_PER_NODE": perNode + "(x2)", "SLURM_NODEID": "0", "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"}
	}
	torchrun := func(world, local int) map[string]string {
		return map[string]string{"RANK": "0", "WORLD_SIZE": fmt.Sprint(world), "LOCAL_WORLD_SIZE": fmt.Sprint(local), "MASTER_ADDR": "127.0.0.1"}
	}
	with := func(m map[string]string, k, v string) map[string]string { m[k] = v; return m }
	for _, tc := range []struct {
		threads int
		env     map[string]string
		want    int
	}{
		{3, torchrun(4, 4), 3},
		{0, nil, 0},
		{0, torchrun(1, 1), 0},
		{0, torchrun(4, 1), cpus},
		{0, torchrun(2*cpus, 2*cpus), 1},
		{0, torchrun(2, 2), max(1, cpus/2)},
		{0, slurm("2"), max(1, cpus/2)},
		{0, with(slurm("2"), "SLURM_CPUS_PER_TASK", "1"), 1},
	} {
		if got := rankThreads(tc.threads, func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("rankThreads(%d, %v) = %d, want %d", tc.threads, tc.env, got, tc.want)
		}
	}
}

// TestMasterFromEnvironment: a launcher (or a rank started by hand) without
// --master-port listens on MASTER_PORT, as torchrun does, and a launcher of several
// nodes in a SLURM allocation meets at its first node; a heartbeat timeout healthy
// ranks could not meet is a usage error.
func TestMasterFromEnvironment(t *testing.T) {
	parse := func(args ...string) (*distFlags, error) {
		c := trainCommand()
		var d distFlags
		d.register(c.Flags)
		if err := c.Flags.Parse(args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return &d, d.validate(set)
	}
	t.Setenv("MASTER_PORT", "31234")
	t.Setenv("MASTER_ADDR", "")
	t.Setenv("SLURM_JOB_NODELIST", "gpu[07-08]")
	if d, err := parse("--nproc-per-node", "2"); err != nil || d.masterPort != 31234 {
		t.Errorf("launcher with MASTER_PORT: port %d, %v; want 31234", d.masterPort, err)
	}
	if d, err := parse("--nproc-per-node", "2", "--master-port", "29999"); err != nil || d.masterPort != 29999 {
		t.Errorf("--master-port over MASTER_PORT: port %d, %v; want 29999", d.masterPort, err)
	}
	if d, err := parse("--rank", "1", "--world-size", "2"); err != nil || d.masterPort != 31234 {
		t.Errorf("--rank with MASTER_PORT: port %d, %v; want 31234", d.masterPort, err)
	}
	if d, _ := parse("--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "1"); launcherMasterAddr(d) != "gpu07" {
		t.Errorf("two nodes in a SLURM allocation: master %q, want gpu07", launcherMasterAddr(d))
	}
	if d, _ := parse("--nproc-per-node", "2"); launcherMasterAddr(d) != "" {
		t.Errorf("one node: master %q, want the launcher's default (127.0.0.1)", launcherMasterAddr(d))
	}
	t.Setenv("MASTER_PORT", "http")
	if _, err := parse("--nproc-per-node", "2"); err == nil || !strings.Contains(err.Error(), "MASTER_PORT") {
		t.Errorf("a bad MASTER_PORT: %v, want an error naming it", err)
	}
	if _, err := parse(); err != nil {
		t.Errorf("one process ignores MASTER_PORT: %v", err)
	}
	if _, err := parse("--nproc-per-node", "2", "--master-port", "29500", "--heartbeat-timeout", "900ms"); err == nil || !strings.Contains(err.Error(), "at least 3s") {
		t.Errorf("--heartbeat-timeout 900ms: %v, want a usage error", err)
	}
}

// TestShareGPUsFromEnvironment: GPTKIT_SHARE_GPUS=yes or =true was taken for no
// (only "1" counted), and the ranks then refused to share a GPU; now the usual
// true values count, in any case, and a value that is neither is a usage error
// naming the variable; --share-gpus wins over it.
func TestShareGPUsFromEnvironment(t *testing.T) {
	parse := func(args ...string) (*distFlags, error) {
		c := trainCommand()
		var d distFlags
		d.register(c.Flags)
		if err := c.Flags.Parse(args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return &d, d.validate(set)
	}
	t.Setenv("MASTER_PORT", "")
	for _, c := range []struct {
		env  string
		want bool
	}{{"1", true}, {"true", true}, {"TRUE", true}, {"yes", true}, {"Yes", true}, {"on", true}, {"ON", true},
		{"", false}, {"0", false}, {"false", false}, {"False", false}, {"no", false}, {"off", false}} {
		t.Setenv(envShareGPUs, c.env)
		if d, err := parse("--nproc-per-node", "2"); err != nil || d.shareGPUs != c.want {
			t.Errorf("%s=%q: share %v, %v; want %v", envShareGPUs, c.env, d.shareGPUs, err, c.want)
		}
		if d, err := parse("--rank", "1", "--world-size", "2"); err != nil || d.shareGPUs != c.want {
			t.Errorf("%s=%q on a rank: share %v, %v; want %v", envShareGPUs, c.env, d.shareGPUs, err, c.want)
		}
	}
	t.Setenv(envShareGPUs, "maybe")
	if _, err := parse("--nproc-per-node", "2"); err == nil || !strings.Contains(err.Error(), envShareGPUs+`="maybe"`) || !strings.Contains(err.Error(), "--share-gpus") {
		t.Errorf("%s=maybe: %v, want a usage error naming it", envShareGPUs, err)
	}
	if d, err := parse("--nproc-per-node", "2", "--share-gpus"); err != nil || !d.shareGPUs {
		t.Errorf("--share-gpus over %s=maybe: share %v, %v", envShareGPUs, d.shareGPUs, err)
	}
	t.Setenv(envShareGPUs, "yes")
	if d, err := parse("--nproc-per-node", "2", "--share-gpus=false"); err != nil || d.shareGPUs {
		t.Errorf("--share-gpus=false over %s=yes: share %v, %v", envShareGPUs, d.shareGPUs, err)
	}
}

// TestLauncherWarnsOversubscribed: --threads N for each of several ranks beyond the
// machine's CPUs was run without a word (torchrun warns); the ranks then slow each
// other down.
func TestLauncherWarnsOversubscribed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	threads := runtime.NumCPU() // two ranks: twice the CPUs
	cmd := exec.Command(os.Args[0], "--data", filepath.Join(t.TempDir(), "missing"), "--out", filepath.Join(t.TempDir(), "run"),
		"--device", "cpu", "--threads", fmt.Sprint(threads), "--nproc-per-node", "2", "--master-port", freePort(t))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	got, _ := cmd.CombinedOutput()
	want := fmt.Sprintf("--threads %d for each of 2 ranks: %d threads on %d CPUs", threads, 2*threads, runtime.NumCPU())
	if !strings.Contains(string(got), want) {
		t.Errorf("no warning %q: %s", want, got)
	}
	// Within the CPUs: no warning.
	cmd = exec.Command(os.Args[0], "--data", filepath.Join(t.TempDir(), "missing"), "--out", filepath.Join(t.TempDir(), "run"),
		"--device", "cpu", "--threads", "1", "--nproc-per-node", "2", "--master-port", freePort(t))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	if got, _ := cmd.CombinedOutput(); strings.Contains(string(got), "slow each other down") {
		t.Errorf("a warning within the CPUs: %s", got)
	}
	// --device auto (the default): on the CPU where the ranks find no GPU (here no
	// driver), so the warning; with a GPU none (TestOversubscribedDevices).
	cmd = exec.Command(os.Args[0], "--data", filepath.Join(t.TempDir(), "missing"), "--out", filepath.Join(t.TempDir(), "run"),
		"--threads", fmt.Sprint(threads), "--nproc-per-node", "2", "--master-port", freePort(t))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	got, _ = cmd.CombinedOutput()
	if _, err := cuda.DeviceCount(cuda.Options{}); err == nil {
		if strings.Contains(string(got), "slow each other down") {
			t.Errorf("--device auto with a GPU: a warning: %s", got)
		}
	} else if !strings.Contains(string(got), want) {
		t.Errorf("--device auto without a GPU (%v): no warning %q: %s", err, want, got)
	}
}

// TestOversubscribedDevices: the warning on --threads × ranks beyond the CPUs is for
// ranks that train on the CPU: --device cpu, and auto where they find no GPU; not
// cuda, cuda-sim or ref, nor auto where they take the GPUs (it warned there, though
// the ranks ran on the GPUs).
func TestOversubscribedDevices(t *testing.T) {
	defer func(f func() (int, error)) { gpuCount = f }(gpuCount)
	noGPU := func() (int, error) { return 0, cuda.ErrNoDriver }
	twoGPUs := func() (int, error) { return 2, nil }
	for _, tc := range []struct {
		device string
		gpus   bool
		warns  bool
	}{
		{"cpu", true, true},
		{"auto", false, true},
		{"auto", true, false},
		{"cuda", false, false},
		{"cuda-sim", false, false},
		{"ref", false, false},
	} {
		gpuCount = noGPU
		if tc.gpus {
			gpuCount = twoGPUs
		}
		got := oversubscribed(tc.device, 4, 2, 4)
		if (got != "") != tc.warns || tc.warns && !strings.Contains(got, "--threads 4 for each of 2 ranks: 8 threads on 4 CPUs") {
			t.Errorf("--device %s (GPUs: %t): %q, want a warning: %t", tc.device, tc.gpus, got, tc.warns)
		}
		if got := oversubscribed(tc.device, 2, 2, 4); got != "" {
			t.Errorf("--device %s within the CPUs: %q", tc.device, got)
		}
	}
}
