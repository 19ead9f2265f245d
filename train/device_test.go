package train

import (
	"context"
	"errors"
	"hash/crc32"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

// TestInitOnAsyncDevice: Model.Init's weights are the seed's on a device whose
// ops run later, in order (a GPU's stream), also when its memory is
// host-visible (CUDA managed memory). The old Init zeroed the weights with an
// asynchronous memset and wrote them from the host without waiting: the zeros
// landed after the host's writes.
func TestInitOnAsyncDevice(t *testing.T) {
	mc := ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 4, NEmbd: 32, BlockSize: 16, Bias: true}
	want, err := NewModel(ref.New(), mc)
	if err != nil {
		t.Fatal(err)
	}
	want.Init(1337)
	wp := want.ReadParams()
	for _, visible := range []bool{false, true} {
		d := newFakeDevice()
		d.visible = visible
		m, err := NewModelDType(d, mc, kernels.BFloat16)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1337)
		d.Sync()
		got := m.ReadParams()
		for i := range wp {
			if math.Float32bits(got[i]) != math.Float32bits(wp[i]) {
				t.Fatalf("visible=%v: param %d = %v after Init, want %v", visible, i, got[i], wp[i])
			}
		}
		// The bfloat16 copy the forward reads is the weights rounded.
		work := kernels.DownloadFloat32(d, m.Work())
		for i, w := range wp {
			if work[i] != kernels.Round(kernels.BFloat16, w) {
				t.Fatalf("visible=%v: bfloat16 weight %d = %v, want %v", visible, i, work[i], kernels.Round(kernels.BFloat16, w))
			}
		}
	}
}

// TestTrainOnDevice: the trainer on a device backend (memory only through
// Upload and Download, ops asynchronous) gives ref's run bit for bit, in
// float32 and bfloat16, and its checkpoint is ref's byte for byte; dtype auto
// is float32 on the host and bfloat16 on a device.
func TestTrainOnDevice(t *testing.T) {
	data := tinyDataset(t)
	for _, dtype := range []string{"float32", "bfloat16"} {
		t.Run(dtype, func(t *testing.T) {
			cfg := tinyConfig(t, data)
			cfg.Dtype = dtype
			want, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			dev := cfg
			dev.Out = t.TempDir()
			got, err := Run(context.Background(), dev, newFakeDevice(), Single{}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			sameMetrics(t, readMetricsFile(t, dev.Out), readMetricsFile(t, cfg.Out))
			sameCheckpointFiles(t, got.Checkpoint, want.Checkpoint)
		})
	}
	for be, want := range map[kernels.Backend]kernels.DType{ref.New(): kernels.Float32, newFakeDevice(): kernels.BFloat16} {
		if got, err := ResolveDType("auto", be); got != want || err != nil {
			t.Errorf("dtype auto on %s: %v (%v), want %v", be.Name(), got, err, want)
		}
	}
}

// TestZeroOnDeviceKeepsMemory: two ZeRO-1 ranks on device backends checkpoint
// every step; the devices' live memory after each step stays what it was after
// the first (the old trainer allocated two whole AdamW moment buffers per
// checkpoint and never freed them: out of GPU memory after a few checkpoints),
// and the run matches one rank's.
func TestZeroOnDeviceKeepsMemory(t *testing.T) {
	data := tinyDataset(t)
	cfg := dpConfig(t, data, 2, 2, 2)
	cfg.Zero, cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery = 1, 8, 8, 1
	cfg.Dtype = "float32" // auto would be bfloat16 on a device
	single := dpConfig(t, data, 1, 4, 2)
	single.MaxSteps, single.LRDecaySteps, single.CheckpointEvery = 8, 8, 1
	if _, err := Run(context.Background(), single, ref.New(), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	devs := []*fakeDevice{newFakeDevice(), newFakeDevice()}
	var mu sync.Mutex
	var live [][2]int64
	_, errs := runRanksOn(t, context.Background(), cfg, startComms(t, 2), func(r int) kernels.Backend { return devs[r] }, func(r int, tr *Trainer) {
		if r == 0 {
			tr.OnStep = func(Metrics) {
				mu.Lock()
				live = append(live, [2]int64{devs[0].liveBytes(), devs[1].liveBytes()})
				mu.Unlock()
			}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if len(live) != 8 {
		t.Fatalf("%d steps reported, want 8", len(live))
	}
	for i, l := range live {
		if l != live[0] {
			t.Errorf("after step %d the devices hold %v bytes; after step 1 they held %v", i+1, l, live[0])
		}
	}
	closeMetrics(t, readMetricsFile(t, cfg.Out), readMetricsFile(t, single.Out), 1e-5)
	for r, d := range devs {
		if n := d.liveBytes(); n != 0 {
			t.Errorf("rank %d: %d bytes still allocated after Close", r, n)
		}
	}
}

// TestOutOfMemoryOneLine: a device without room for the activations gives one
// line naming what was being allocated, the bytes asked for and free, and the
// next step, never a panic.
func TestOutOfMemoryOneLine(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.BatchSize, cfg.GradAccum = 64, 1
	d := newFakeDevice()
	d.limit = 200 << 10
	_, err := NewTrainer(context.Background(), cfg, d, Single{}, testLogger(t))
	var oom *kernels.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("NewTrainer on a full device: %v, want an out-of-memory error", err)
	}
	msg := err.Error()
	for _, want := range []string{"out of memory on fake device allocating activations", "asked", "free of", "lower batch_size (now 64)", "grad_accum"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	if n := d.liveBytes(); n != 0 {
		t.Errorf("%d bytes left allocated after the failed NewTrainer", n)
	}
}

// TestParamsCRCInChunks: the weights' checksum that checkWeights compares across ranks
// is the CRC-32C of all of ReadParams' bytes, on the host and on a device read in
// chunks of every size, including ones that do not divide the weights; and on a device
// it holds a chunk of host memory, not a copy of the weights (it did: 4 bytes a
// parameter at each check).
func TestParamsCRCInChunks(t *testing.T) {
	mc := ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 4, NEmbd: 32, BlockSize: 16, Bias: true}
	host, err := NewModel(ref.New(), mc)
	if err != nil {
		t.Fatal(err)
	}
	host.Init(1337)
	want := crc32.Checksum(kernels.Float32Bytes(host.ReadParams()), crc32.MakeTable(crc32.Castagnoli))
	if got := host.paramsCRC(); got != want {
		t.Fatalf("host: %08x, want %08x", got, want)
	}
	d := newFakeDevice()
	m, err := NewModel(d, mc)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1337)
	d.Sync()
	defer func(c int) { crcChunk = c }(crcChunk)
	n := m.Params.Len()
	for _, chunk := range []int{1, 7, 1000, n - 1, n, n + 5, 1 << 20} {
		crcChunk = chunk
		if got := m.paramsCRC(); got != want {
			t.Fatalf("device, chunks of %d floats: %08x, want %08x", chunk, got, want)
		}
	}
	crcChunk = n / 8
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m.paramsCRC()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(n) { // a copy: 4n bytes
		t.Fatalf("paramsCRC of %d parameters allocated %d bytes, want about a chunk (%d)", n, grew, 4*crcChunk)
	}
}
