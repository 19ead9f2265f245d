package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
	"gptkit/train/safetensors"
)

// oldGatherMoments is how a save gathered the AdamW state before it was gathered
// tensor by tensor as the file is written: the whole state on rank 0 (nil on the
// others), under ZeRO-1 through all-gathers of every rank's shard, chunk by chunk.
// Kept for TestSaveMatchesOlder.
func oldGatherMoments(t *Trainer, ctx context.Context) (m, v []float32, err error) {
	rank0 := t.coll.Rank() == 0
	if !t.zero() {
		if !rank0 {
			return nil, nil, nil
		}
		return readHost(t.be, t.m), readHost(t.be, t.v), nil
	}
	if rank0 {
		m, v = make([]float32, t.flat.padded), make([]float32, t.flat.padded)
	}
	for _, p := range []struct {
		full  []float32
		shard kernels.Tensor
	}{{m, t.m}, {v, t.v}} {
		W, r, S := t.coll.World(), t.coll.Rank(), p.shard.Len()
		k := min(S, momentChunk)
		stage := make([]float32, W*k)
		for c := 0; c < S; c += k {
			n := min(k, S-c)
			own := stage[r*k : r*k+n]
			if p.shard.IsHost() {
				copy(own, p.shard.Float32s()[c:c+n])
			} else {
				t.be.Download(kernels.Float32Bytes(own), p.shard.Slice(c, c+n))
			}
			if err := t.coll.AllGather(ctx, stage); err != nil {
				return nil, nil, err
			}
			if p.full != nil {
				for q := range W {
					copy(p.full[q*S+c:q*S+c+n], stage[q*k:q*k+n])
				}
			}
		}
	}
	return m, v, nil
}

// setMoments gives every rank's AdamW state values that tell apart each place of
// the layout and each moment.
func setMoments(tr *Trainer) {
	for i, x := range []kernels.Tensor{tr.m, tr.v} {
		vals := make([]float32, x.Len())
		for j := range vals {
			p := tr.flat.lo + j
			vals[j] = float32(p%100003+1)*float32(1-2*(p%2)) + float32(i)/4
		}
		if x.IsHost() {
			copy(x.Float32s(), vals)
		} else {
			tr.be.Upload(x, kernels.Float32Bytes(vals))
		}
	}
}

// newRanks makes a trainer of cfg on each rank of a world of the given size (one
// rank: Single), on backends from newBE.
func newRanks(t *testing.T, cfg Config, world int, newBE func() kernels.Backend) []*Trainer {
	t.Helper()
	ctx := context.Background()
	var comms []Collectives
	if world == 1 {
		comms = []Collectives{Single{}}
	} else {
		comms = startComms(t, world)
	}
	trs := make([]*Trainer, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range trs {
		wg.Go(func() { trs[r], errs[r] = NewTrainer(ctx, cfg, newBE(), comms[r], testLogger(t)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Close()
		}
	})
	return trs
}

// onRanks runs f on every rank at once and returns their errors.
func onRanks(trs []*Trainer, f func(tr *Trainer) error) error {
	errs := make([]error, len(trs))
	var wg sync.WaitGroup
	for r, tr := range trs {
		wg.Go(func() { errs[r] = f(tr) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TestSaveMatchesOlder: a checkpoint's model and optimizer files, now written tensor
// by tensor as the AdamW state is gathered (under ZeRO-1 by every rank, in the
// file's order), are byte for byte the files of the whole state gathered first and
// written with safetensors.Write: one rank on the CPU and on the fake device, 2
// ranks with ZeRO off and on, on the CPU and the fake device, and 3 ranks with
// ZeRO; with chunks of 7 floats, so that tensors are cut at chunks and at shards.
func TestSaveMatchesOlder(t *testing.T) {
	data := tinyDataset(t)
	for _, chunk := range []int{7, momentChunk} {
		for _, tc := range []struct {
			world, zero int
			fake        bool
		}{{1, 0, false}, {1, 0, true}, {2, 0, false}, {2, 1, false}, {2, 0, true}, {2, 1, true}, {3, 1, false}} {
			name := fmt.Sprintf("chunk %d, %d ranks, zero %d, fake device %v", chunk, tc.world, tc.zero, tc.fake)
			t.Run(name, func(t *testing.T) {
				defer func(was int) { momentChunk = was }(momentChunk)
				momentChunk = chunk
				cfg := tinyConfig(t, data)
				cfg.Zero, cfg.EvalSteps, cfg.Dropout = tc.zero, 0, 0
				newBE := func() kernels.Backend { return cpu.New(1) }
				if tc.fake {
					newBE = func() kernels.Backend { return newFakeDevice() }
				}
				trs := newRanks(t, cfg, tc.world, newBE)
				for _, tr := range trs {
					setMoments(tr)
					tr.step = 3
				}
				ctx := context.Background()
				if err := onRanks(trs, func(tr *Trainer) error { return tr.save(ctx) }); err != nil {
					t.Fatal(err)
				}
				var m, v []float32
				if err := onRanks(trs, func(tr *Trainer) error {
					var err error
					if tr.coll.Rank() == 0 {
						m, v, err = oldGatherMoments(tr, ctx)
					} else {
						_, _, err = oldGatherMoments(tr, ctx)
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
				tr := trs[0]
				var model, opt bytes.Buffer
				if err := safetensors.Write(&model, tr.model.tensorsOf(tr.model.ReadParams(), ""), map[string]string{"format": "pt", "step": "3"}); err != nil {
					t.Fatal(err)
				}
				ts := append(tr.model.tensorsOf(m, "exp_avg."), tr.model.tensorsOf(v, "exp_avg_sq.")...)
				if err := safetensors.Write(&opt, ts, map[string]string{"step": "3", "optimizer": "AdamW"}); err != nil {
					t.Fatal(err)
				}
				for _, f := range []struct {
					name string
					want []byte
				}{{ModelFile, model.Bytes()}, {OptimizerFile, opt.Bytes()}} {
					got, err := os.ReadFile(filepath.Join(tr.lastCkpt, f.name))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, f.want) {
						i := 0
						for i < min(len(got), len(f.want)) && got[i] == f.want[i] {
							i++
						}
						t.Errorf("%s: %d bytes, differing from the older save's %d at byte %d", f.name, len(got), len(f.want), i)
					}
				}
			})
		}
	}
}

// TestSaveMemory: a checkpoint's save holds at most about one tensor of the AdamW
// state in rank 0's host memory: the heap grows by little during it. It grew by the
// whole state (8 bytes a parameter: 12 GB at 1.5B parameters), gathered into host
// memory before the file was written: under ZeRO-1, and on a device (where the
// weights, 4 bytes a parameter more, were downloaded whole too). 25M parameters;
// with 2 ranks the heap is both ranks'.
func TestSaveMemory(t *testing.T) {
	data := tinyDataset(t)
	for _, tc := range []struct {
		name        string
		world, zero int
		be          func() kernels.Backend
	}{
		{"2 ranks zero", 2, 1, func() kernels.Backend { return cpu.New(1) }},
		{"fake device", 1, 0, func() kernels.Backend { return newFakeDevice() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, data)
			cfg.NLayer, cfg.NHead, cfg.NEmbd = 8, 8, 512 // 25M parameters
			cfg.BatchSize, cfg.GradAccum, cfg.EvalSteps, cfg.Dropout, cfg.Zero = 1, 1, 0, 0, tc.zero
			trs := newRanks(t, cfg, tc.world, tc.be)
			for _, tr := range trs {
				tr.be.Sync() // (the fake device's queued setup, and the copies it holds, run and go)
			}
			ctx := context.Background()
			var err error
			peak, allocated := heapPeak(func() { err = onRanks(trs, func(tr *Trainer) error { return tr.save(ctx) }) })
			if err != nil {
				t.Fatal(err)
			}
			P := trs[0].model.Config.NumParams()
			state := uint64(8 * P)
			t.Logf("save of %d parameters, %s (AdamW state %d MB): heap grew %d MB at most (%.2f bytes a parameter), %d MB allocated",
				P, tc.name, state>>20, peak>>20, float64(peak)/float64(P), allocated>>20)
			if peak > state/8 {
				t.Errorf("save, %s: the heap grew by %d MB, over an eighth of the %d MB of AdamW state", tc.name, peak>>20, state>>20)
			}
		})
	}
}

// failAfter is a writer that fails once more than n bytes would have passed.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("no space left on device (test)")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestSaveFailsMidwayRanks: when rank 0's write of the optimizer file fails midway
// (a full disk), with ZeRO-1 while the other rank is gathering the AdamW state with
// it tensor by tensor, both ranks stop, at once, with rank 0's error, and no
// checkpoint of that step is published. (Without ZeRO too, where the other rank
// waits at the barrier.)
func TestSaveFailsMidwayRanks(t *testing.T) {
	data := tinyDataset(t)
	for _, zero := range []int{1, 0} {
		t.Run("zero "+strconv.Itoa(zero), func(t *testing.T) {
			defer func(was int) { momentChunk = was }(momentChunk)
			momentChunk = 1000
			cfg := tinyConfig(t, data)
			cfg.NEmbd, cfg.NHead = 128, 4 // an optimizer file of several MB: bufio's 1 MB writes
			cfg.Dropout, cfg.EvalSteps, cfg.Zero, cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery = 0, 0, zero, 4, 4, 4
			cfg.BatchSize /= 2
			testHookOptimizerWriter = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 1 << 20} }
			defer func() { testHookOptimizerWriter = nil }()
			done := make(chan []error, 1)
			go func() {
				_, errs := runRanks(t, context.Background(), cfg, startComms(t, 2), nil)
				done <- errs
			}()
			var errs []error
			select {
			case errs = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the ranks did not stop within 2 minutes of rank 0's failed save")
			}
			if !errors.Is(errs[0], errDiskFull) || !strings.Contains(errs[0].Error(), OptimizerFile) {
				t.Errorf("rank 0: %v, want the write's error, naming %s", errs[0], OptimizerFile)
			}
			if errs[1] == nil || !strings.Contains(errs[1].Error(), errDiskFull.Error()) {
				t.Errorf("rank 1: %v, want rank 0's error", errs[1])
			}
			if zero == 1 && (errs[1] == nil || !strings.Contains(errs[1].Error(), "gather the AdamW state")) {
				t.Errorf("rank 1: %v, want it stopped while gathering the AdamW state", errs[1])
			}
			if _, err := os.Stat(filepath.Join(cfg.Out, CheckpointsDir, checkpoint.DirName(4))); err == nil {
				t.Errorf("a checkpoint of step 4 was published")
			}
			t.Logf("rank 0: %v\nrank 1: %v", errs[0], errs[1])
		})
	}
}
