package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
	"gptkit/train/safetensors"
)

// heapPeak runs f and returns the most the live heap grew while it ran (sampled
// every half millisecond, and at its end) and the bytes f allocated in all.
func heapPeak(f func()) (peak, allocated uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (live, allocs uint64) {
		metrics.Read(s)
		return s[0].Value.Uint64(), s[1].Value.Uint64()
	}
	base, allocs0 := read()
	var mu sync.Mutex
	top := base
	note := func() {
		live, _ := read()
		mu.Lock()
		top = max(top, live)
		mu.Unlock()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				note()
			}
		}
	})
	f()
	note()
	close(done)
	wg.Wait()
	_, allocs1 := read()
	return top - base, allocs1 - allocs0
}

// TestResumeMemory: resuming a checkpoint (and LoadCheckpoint, which sample, score
// and export use) reads each tensor straight into its place: the heap grows by at
// most the state's size (weights and AdamW's two moments, 12 bytes a parameter;
// on the host they are read into the trainer's own memory, and it grows by little
// more than a buffer; for a device, through a host buffer of one tensor, though the
// fake device's Upload keeps a copy of each until the host waits). It grew by about 3 times that: the files were read
// whole into memory, then copied into tensors, then copied into place.
func TestResumeMemory(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.NLayer, cfg.NHead, cfg.NEmbd = 8, 8, 512 // 25M parameters
	cfg.BatchSize, cfg.GradAccum, cfg.EvalSteps, cfg.Dropout = 1, 1, 0, 0
	ctx := context.Background()
	tr, err := NewTrainer(ctx, cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.save(ctx); err != nil {
		t.Fatal(err)
	}
	dir := tr.lastCkpt
	P := tr.model.Config.NumParams()
	tr.Close()

	state := uint64(12 * P) // float32 weights, exp_avg and exp_avg_sq
	var rerr error
	for _, be := range []kernels.Backend{cpu.New(2), newFakeDevice()} {
		fresh := cfg
		fresh.Out = filepath.Join(t.TempDir(), "run")
		tr, err := NewTrainer(ctx, fresh, be, Single{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		cd, err := openCheckpoint(ctx, tr.ckpt(), dir)
		if err != nil {
			t.Fatal(err)
		}
		peak, allocated := heapPeak(func() { _, rerr = tr.restore(ctx, cd) })
		tr.Close()
		if rerr != nil {
			t.Fatal(rerr)
		}
		t.Logf("resume of %d parameters on %s (state %d MB): heap grew %d MB at most (%.1f bytes a parameter), %d MB allocated",
			P, be.Name(), state>>20, peak>>20, float64(peak)/float64(P), allocated>>20)
		if peak > state*3/2 {
			t.Errorf("resume on %s: the heap grew by %d MB, over 1.5 times the %d MB of weights and AdamW state", be.Name(), peak>>20, state>>20)
		}
	}

	weights := uint64(4 * P)
	peak, allocated := heapPeak(func() {
		m, _, err := LoadCheckpoint(ctx, dir, cpu.New(2))
		if err != nil {
			rerr = err
			return
		}
		runtime.KeepAlive(m)
	})
	if rerr != nil {
		t.Fatal(rerr)
	}
	t.Logf("LoadCheckpoint (weights %d MB): heap grew %d MB at most (%.1f bytes a parameter), %d MB allocated",
		weights>>20, peak>>20, float64(peak)/float64(P), allocated>>20)
	// The model's own float32 weights are part of the growth here.
	if peak > weights*3/2 {
		t.Errorf("LoadCheckpoint: the heap grew by %d MB, over 1.5 times the model's %d MB of weights", peak>>20, weights>>20)
	}
}

// TestResumeDamagedHeader: a checkpoint file damaged in its safetensors header after
// the save is refused as damaged (errors.Is checkpoint.ErrCorrupt: its sha256 does not
// match checkpoint.json), not as a malformed file, now that the file is parsed as it is
// read: resume auto's fallback to an older checkpoint and the hints go by that.
func TestResumeDamagedHeader(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 10, 10
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cfg.Out, CheckpointsDir, checkpoint.DirName(10))
	for _, name := range []string{ModelFile, OptimizerFile} {
		file := filepath.Join(dir, name)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(data, []byte(`"shape"`))
		data[i+1] = 'S' // an unknown field
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		named := cfg
		named.Resume, named.Out, named.MaxSteps, named.LRDecaySteps = dir, filepath.Join(t.TempDir(), "run"), 12, 12
		_, err = Run(context.Background(), named, cpu.New(2), Single{}, testLogger(t))
		if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), name) {
			t.Errorf("resume of a checkpoint whose %s header is damaged: %v, want ErrCorrupt naming the file", name, err)
		}
		if name == ModelFile {
			if _, _, err := LoadCheckpoint(context.Background(), dir, cpu.New(2)); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("LoadCheckpoint of a checkpoint whose %s header is damaged: %v, want ErrCorrupt", name, err)
			}
		}
		data[i+1] = 's'
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResumeMemoryRanks: a resume of several ranks holds at most about one tensor of
// the AdamW state in rank 0's host memory at a time: rank 0 reads the optimizer file
// tensor by tensor and broadcasts each tensor, in chunks, as it goes. It read the
// whole state into host memory first (8 bytes a parameter: 12 GB at 1.5B parameters),
// then broadcast it. (With ZeRO-1, where rank 0 cannot read the state into its own
// shard; the heap is both ranks'. Not on the fake device, whose Upload keeps a copy
// of what it is given until the host waits.)
func TestResumeMemoryRanks(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.NLayer, cfg.NHead, cfg.NEmbd = 8, 8, 512 // 25M parameters
	cfg.BatchSize, cfg.GradAccum, cfg.EvalSteps, cfg.Dropout, cfg.Zero = 1, 1, 0, 0, 1
	ctx := context.Background()
	tr, err := NewTrainer(ctx, cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range []kernels.Tensor{tr.m, tr.v} { // values to tell apart
		for j := range x.Float32s() {
			x.Float32s()[j] = float32(j%1009+1) + float32(i)/2
		}
	}
	if err := tr.save(ctx); err != nil {
		t.Fatal(err)
	}
	dir := tr.lastCkpt
	P := tr.model.Config.NumParams()
	tr.Close()

	// Two fresh ranks, then the resume: rank 0 restores, and shares the start.
	fresh := cfg
	fresh.Out = filepath.Join(t.TempDir(), "run")
	comms := startComms(t, 2)
	trs := make([]*Trainer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range trs {
		wg.Go(func() { trs[r], errs[r] = NewTrainer(ctx, fresh, cpu.New(1), comms[r], testLogger(t)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, tr := range trs {
			tr.Close()
		}
	}()
	peak, allocated := heapPeak(func() {
		var wg sync.WaitGroup
		wg.Go(func() {
			moments, err := trs[0].restoreNewestIntact(ctx, dir, nil)
			if err == nil {
				err = trs[0].shareStart(ctx, true, moments)
			}
			errs[0] = err
		})
		wg.Go(func() { errs[1] = trs[1].shareStart(ctx, false, nil) })
		wg.Wait()
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	state := uint64(8 * P) // exp_avg and exp_avg_sq
	t.Logf("2-rank resume of %d parameters (AdamW state %d MB): heap grew %d MB at most (%.2f bytes a parameter), %d MB allocated",
		P, state>>20, peak>>20, float64(peak)/float64(P), allocated>>20)
	if peak > state/8 {
		t.Errorf("2-rank resume: the heap grew by %d MB, over an eighth of the %d MB of AdamW state", peak>>20, state>>20)
	}

	// Every rank holds its shard of the checkpoint's state.
	f, err := safetensors.ReadFile(filepath.Join(dir, OptimizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if trs[0].resumed != dir {
		t.Errorf("rank 0 resumed %q, want %q", trs[0].resumed, dir)
	}
	for r, tr := range trs {
		lo, hi := tr.flat.lo, tr.flat.hi
		for i, x := range []kernels.Tensor{tr.m, tr.v} {
			own := readHost(tr.be, x)
			for _, ti := range tr.model.Tensors {
				want, ok := f.Tensor([]string{"exp_avg.", "exp_avg_sq."}[i] + ti.Name)
				if !ok {
					t.Fatalf("%s has no %s", OptimizerFile, ti.Name)
				}
				for j, w := range want.Data {
					if o := ti.Offset + j; o >= lo && o < hi && math.Float32bits(own[o-lo]) != math.Float32bits(w) {
						t.Fatalf("rank %d: moment %d of %s[%d] = %v, want %v", r, i, ti.Name, j, own[o-lo], w)
					}
				}
			}
		}
	}
}
