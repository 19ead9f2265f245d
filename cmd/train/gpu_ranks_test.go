package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// store), ZeRO-1 included (and NCCL's environment reaching every rank), train like one rank with their global batch: losses
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
		{4, 2, nil},
		{4, 2, []string{"--zero", "1"}},
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

// TestSharedGPU: two ranks on one GPU are refused, naming the GPU, before any
// training; --share-gpus allows it (their collectives then go through the ring).
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

// TestCudaSimFailures: on cuda-sim, a killed rank, a rank whose GPU hangs
// before a collective (the others stuck in it), a rank whose host hangs (alive,
// heartbeating, never arriving) and an NCCL error in the background each end
// the whole job in under 60 s after the collective deadline (3 s here), with
// one line naming the rank; with --max-restarts 1 the stuck job restarts from
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
	} {
		t.Run(strings.Split(tc.fault, ":")[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "failed")
			r := trainProc(t, 2*time.Minute, []string{faultEnv + "=" + tc.fault}, base(out)...)
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
