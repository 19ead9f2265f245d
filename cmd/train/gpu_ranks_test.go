package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/train"
)

// simDPArgs is dpArgs on the simulated GPU.
func simDPArgs(data, out string, batch, steps, ckpt int) []string {
	args := dpArgs(data, out, batch, steps, ckpt)
	for i := range args {
		if args[i] == "cpu" && args[i-1] == "--device" {
			args[i] = "cuda-sim"
		}
	}
	return args
}

// TestCudaSimRanksMatchOne: 2 and 4 ranks on cuda-sim, their collectives
// through the simulated NCCL (whose unique id travels through the rendezvous
// store), the gradients in one bucket or in one per layer (all-reduced on the
// communication stream as the backward pass finishes them, the simulator
// checking the streams' ordering), ZeRO-1 included (buckets reduced to the
// ranks owning their shards, or one reduce-scatter) (and NCCL's environment
// reaching every rank), train like one rank with their global batch: losses
// within 1e-5 (relative, float32).
func TestCudaSimRanksMatchOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	one := filepath.Join(t.TempDir(), "one")
	if code, _, stderr := runTrain(t, simDPArgs(data, one, 8, 12, 0)...); code != 0 {
		t.Fatalf("one rank: %s", stderr)
	}
	want := readMetrics(t, one)
	for _, tc := range []struct {
		ranks int
		batch int
		extra []string
	}{
		{2, 4, nil},
		{2, 4, []string{"--bucket-mb", "0.01"}},
		{4, 2, []string{"--bucket-mb", "0.01"}},
		{4, 2, []string{"--zero", "1"}}, // one bucket, reduced to the shards' ranks
		{4, 2, []string{"--zero", "1", "--bucket-mb", "0.01"}},
		{2, 4, []string{"--zero", "1", "--bucket-mb", "0"}}, // one reduce-scatter
	} {
		out := filepath.Join(t.TempDir(), "dp")
		args := append(simDPArgs(data, out, tc.batch, 12, 0), "--nproc-per-node", fmt.Sprint(tc.ranks), "--master-port", freePort(t))
		r := trainProc(t, 3*time.Minute, []string{"NCCL_DEBUG=WARN"}, append(args, tc.extra...)...)
		if r.code != 0 {
			t.Fatalf("%d ranks %v: exit %d:\n%s", tc.ranks, tc.extra, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, `via="simulated nccl over the ring"`) || strings.Count(r.stderr, "msg=gpu ") != tc.ranks ||
			strings.Count(r.stderr, `nccl_env="NCCL_DEBUG=WARN"`) != tc.ranks {
			t.Errorf("%d ranks: not over the simulated NCCL, or not every rank logged its GPU and NCCL's environment:\n%s", tc.ranks, r.stderr)
		}
		closeLosses(t, readMetrics(t, out), want, 1e-5)
	}
}

// TestCudaSimBucketsOverlap: on cuda-sim with buckets of about a layer, the
// streams' trace shows the buckets' all-reduces (under ZeRO-1 their reduces
// to the shards' ranks) queued on the communication stream before the
// backward pass's last kernel (the embeddings' gradient), so
// communication overlaps the rest of the backward; and a planted missing
// event wait (the comm stream not waiting for the compute stream) is caught by
// the simulator's hazard check, which names both ops.
func TestCudaSimBucketsOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	for _, tc := range []struct {
		op    string // the buckets' collective
		extra []string
	}{
		{"ncclAllReduce", nil},
		{"ncclReduce", []string{"--zero", "1"}}, // each part of a bucket to its shard's rank
	} {
		trace := t.TempDir()
		out := filepath.Join(t.TempDir(), "dp")
		args := append(simDPArgs(data, out, 4, 2, 0), "--nproc-per-node", "2", "--master-port", freePort(t), "--bucket-mb", "0.01")
		r := trainProc(t, 2*time.Minute, []string{envSimTrace + "=" + trace}, append(args, tc.extra...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d:\n%s", tc.extra, r.code, r.stderr)
		}
		files, _ := filepath.Glob(filepath.Join(trace, "*.trace"))
		if len(files) != 2 {
			t.Fatalf("%d traces, want one per rank: %v", len(files), files)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			last := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "kernel encoder_backward_wte") })
			var before []string
			for _, l := range lines[:max(last, 0)] {
				if strings.HasPrefix(l, "comm ") && strings.Contains(l, " "+tc.op+" ") {
					before = append(before, l)
				}
			}
			if last < 0 || len(before) < 2 {
				t.Fatalf("%v %s: want bucket %ss on the comm stream before the first backward's last kernel (line %d), found %q", tc.extra, f, tc.op, last+1, before)
			}
			t.Logf("%v %s: %d of the first step's %ss queued before its backward's last kernel (line %d of %d)", tc.extra, filepath.Base(f), len(before), tc.op, last+1, len(lines))
			if c := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "comm ") }); c >= 2 {
				t.Logf("the first bucket:\n%s", strings.Join(lines[c-2:min(c+5, len(lines))], "\n"))
			}
		}
	}

	out := filepath.Join(t.TempDir(), "nowait")
	args := append(simDPArgs(data, out, 4, 2, 0), "--nproc-per-node", "2", "--master-port", freePort(t), "--bucket-mb", "0.01")
	r := trainProc(t, 2*time.Minute, []string{faultEnv + "=nowait:1:0"}, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "stream hazard: ncclAllReduce on the comm stream") || !strings.Contains(r.stderr, "on the compute stream writes") {
		t.Fatalf("planted missing wait: exit %d, want 1 and the hazard naming both ops:\n%s", r.code, r.stderr)
	}
	t.Logf("caught: %s", lastLine(r.stderr))
}

// TestCudaSimRanksBFloat16: under bfloat16, 2 ranks (buckets; ZeRO-1 with
// the bfloat16 weights all-gathered: the trace shows each step's all-gather
// writing 2 bytes a weight, the float32 masters gathered only to be compared
// and saved at the end) train close to one rank with their global batch. Not
// bit-close as in float32: each rank's bfloat16 activations and matmuls cover
// half the batch, and the float32 gradients are summed in another order.
func TestCudaSimRanksBFloat16(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	one := filepath.Join(t.TempDir(), "one")
	if code, _, stderr := runTrain(t, append(simDPArgs(data, one, 8, 12, 0), "--dtype", "bfloat16")...); code != 0 {
		t.Fatalf("one rank: %s", stderr)
	}
	want := readMetrics(t, one)
	for _, extra := range [][]string{{"--bucket-mb", "0.01"}, {"--zero", "1"}} {
		out, trace := filepath.Join(t.TempDir(), "dp"), t.TempDir()
		args := append(simDPArgs(data, out, 4, 12, 0), "--nproc-per-node", "2", "--master-port", freePort(t), "--dtype", "bfloat16")
		r := trainProc(t, 3*time.Minute, []string{envSimTrace + "=" + trace}, append(args, extra...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d:\n%s", extra, r.code, r.stderr)
		}
		if extra[0] == "--zero" {
			half, full := gatherSizes(t, trace)
			if half < 12 || full > 4 {
				t.Errorf("ZeRO-1 under bfloat16: %d all-gathers of 2-byte weights (want one per step, 12), %d of float32 ones (want them only at the end)", half, full)
			}
		}
		got := readMetrics(t, out)
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(got[i].Loss-want[i].Loss)/want[i].Loss)
		}
		t.Logf("%v: largest relative loss difference from one rank over %d steps: %.3g", extra, len(got), worst)
		closeLosses(t, got, want, bf16RanksTol)
	}
}

// bf16RanksTol is TestCudaSimRanksBFloat16's tolerance (relative).
const bf16RanksTol = 1e-3

// gatherSizes counts the weights' all-gathers in the streams' traces of a
// run: half those of 2-byte elements, full those of float32 (the largest
// all-gather of the run is taken as the float32 weights').
func gatherSizes(t *testing.T, dir string) (half, full int) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	sizes := map[int]int{}
	largest := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			var w int
			if i := strings.Index(l, " ncclAllGather "); i >= 0 {
				if _, err := fmt.Sscanf(l[strings.LastIndex(l, "w="):], "w=%d", &w); err == nil {
					sizes[w]++
					largest = max(largest, w)
				}
			}
		}
	}
	t.Logf("all-gathers by bytes written (both ranks): %v", sizes)
	return sizes[largest/2] / len(files), sizes[largest] / len(files)
}

// TestSharedGPU: two ranks on one GPU are refused, naming the GPU, before any
// training, and the other rank defers to the refusal (it said "interrupted while
// starting ... rerun the same command"); --share-gpus allows it (their
// collectives then go through the ring).
func TestSharedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "shared")
	args := append(simDPArgs(data, out, 4, 3, 0), "--nproc-per-node", "2", "--master-port", freePort(t))
	r := trainProc(t, time.Minute, []string{envSimGPUs + "=1"}, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "ranks 0 and 1 use one GPU (GPU-") || !strings.Contains(r.stderr, "--share-gpus") {
		t.Fatalf("exit %d, want 1 and the shared GPU named:\n%s", r.code, r.stderr)
	}
	// Rank 1, waiting for rank 0's plan when the launcher stopped it, defers to
	// rank 0's refusal: no "interrupted ... rerun the same command", which fails
	// the same way again. The launcher's last line names the refusal.
	if strings.Contains(r.stderr, "interrupted") || strings.Contains(r.stderr, "rerun") {
		t.Errorf("a rank says it was interrupted, or to rerun:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "[rank 1] train: stopped while starting, before the first step (nothing was saved): the group failed: dist: rank 0 failed: train: ranks 0 and 1 use one GPU") {
		t.Errorf("rank 1 does not name rank 0's refusal:\n%s", r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "train: launch: rank 0 failed: train: ranks 0 and 1 use one GPU") || !strings.Contains(last, "--share-gpus") {
		t.Errorf("the launcher's last line: %s", last)
	}
	if _, err := os.Stat(filepath.Join(out, train.MetricsName)); err == nil {
		t.Error("it trained")
	}
	out = filepath.Join(t.TempDir(), "allowed")
	args = append(simDPArgs(data, out, 4, 3, 0), "--nproc-per-node", "2", "--master-port", freePort(t), "--share-gpus")
	r = trainProc(t, time.Minute, []string{"CUDA_VISIBLE_DEVICES=3"}, args...)
	if r.code != 0 || !strings.Contains(r.stderr, "ranks share a GPU (--share-gpus)") || !strings.Contains(r.stderr, "cuda_visible_devices=3") {
		t.Fatalf("--share-gpus: exit %d:\n%s", r.code, r.stderr)
	}
}

// TestSharedGPUByHand: two cuda-sim ranks started by hand (--rank, no LOCAL_RANK) both
// take GPU 0; the refusal names LOCAL_RANK, what such ranks lack (it named the
// launchers and CUDA_VISIBLE_DEVICES only).
func TestSharedGPUByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "byhand")
	port := freePort(t)
	for _, k := range []string{"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "RANK", "WORLD_SIZE"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Skipf("%s is set here", k)
		}
	}
	env := []string{"GPTKIT_JOB_TOKEN=s3cret", "MASTER_ADDR=127.0.0.1"}
	var wg sync.WaitGroup
	results := make([]procResult, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[r] = trainProc(t, time.Minute, env, append(simDPArgs(data, out, 4, 3, 0), "--rank", fmt.Sprint(r), "--world-size", "2", "--master-port", port)...)
		}()
	}
	wg.Wait()
	r := results[0]
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; r.code != 1 || !strings.Contains(last, "ranks 0 and 1 use one GPU") || !strings.Contains(last, "--rank: LOCAL_RANK") {
		t.Fatalf("rank 0: exit %d, want 1 and the shared GPU refused naming LOCAL_RANK for ranks started by hand:\n%s", r.code, r.stderr)
	}
}

// TestCudaSimFailures: on cuda-sim, a killed rank, a rank whose GPU hangs
// before a collective (the others stuck in it), a rank whose host hangs (alive,
// heartbeating, never arriving) and an NCCL error in the background each end
// the whole job in under 60 s after the collective deadline (3 s here), with
// one line naming the rank; so do a GPU hang before, and an NCCL error in, a
// gradient bucket's all-reduce on the communication stream (the watchdog
// watches those too); with --max-restarts 1 the stuck job restarts from
// its checkpoint and ends as an uninterrupted run does.
func TestCudaSimFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	data, _ := makeCharDataset(t)
	straight := filepath.Join(t.TempDir(), "straight")
	base := func(out string) []string {
		return append(simDPArgs(data, out, 4, 12, 4), "--nproc-per-node", "2", "--master-port", freePort(t), "--collective-timeout", "3s")
	}
	if r := trainProc(t, 2*time.Minute, nil, base(straight)...); r.code != 0 {
		t.Fatalf("uninterrupted: exit %d:\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		fault string
		want  []string // one of
	}{
		{"kill:1:20", []string{"rank 1 was killed by signal 9", "rank 1 disconnected"}},
		{"gpuhang:1:20", []string{"rank 1 did not arrive at collective #"}},
		{"hang:1:20", []string{"rank 1 did not arrive at collective #"}},
		{"ncclerror:1:20", []string{"cuda: rank 1: nccl "}},
		{"commhang:1:10", []string{"rank 1 did not arrive at collective #"}},
		{"commerror:1:10", []string{"cuda: rank 1: nccl all-reduce"}},
	} {
		t.Run(strings.Split(tc.fault, ":")[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "failed")
			args := base(out)
			if strings.HasPrefix(tc.fault, "comm") {
				args = append(args, "--bucket-mb", "0.01") // a bucket a layer
			}
			r := trainProc(t, 2*time.Minute, []string{faultEnv + "=" + tc.fault}, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			named := false
			for _, w := range tc.want {
				named = named || strings.Contains(last, w)
			}
			if r.code != 1 || !named {
				t.Fatalf("exit %d, last line %q; want 1 and rank 1 named (%q):\n%s", r.code, last, tc.want, r.stderr)
			}
			if r.took > 60*time.Second {
				t.Errorf("the job took %s to stop", r.took)
			}
			t.Logf("stopped after %s: %s", r.took.Round(time.Millisecond), last)
		})
	}
	out := filepath.Join(t.TempDir(), "restarted")
	r := trainProc(t, 2*time.Minute, []string{faultEnv + "=gpuhang:1:20"}, append(base(out), "--max-restarts", "1")...)
	if r.code != 0 || !strings.Contains(r.stderr, "restarting the group") {
		t.Fatalf("with a restart: exit %d:\n%s", r.code, r.stderr)
	}
	if sum := parseSummary(t, r.stdout); sum.Resumed == "" || sum.Step != 12 {
		t.Errorf("summary %+v: want resumed to step 12", sum)
	}
	closeLosses(t, readMetrics(t, out), readMetrics(t, straight), 0)
}
