package train

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/ref"
	"gptkit/train/hfgpt2"
)

// TestExportInitFrom: a model exported as a Hugging Face directory starts a run
// with the same weights (the padded embedding rows come back zero), a smaller
// block_size crops the position embeddings, and another shape is refused.
func TestExportInitFrom(t *testing.T) {
	m, st := trainedTiny(t)
	hf := filepath.Join(t.TempDir(), "hf")
	if err := ExportHF(hf, m, st); err != nil {
		t.Fatal(err)
	}
	shape, err := InitShape(hf)
	if err != nil || shape != m.Config {
		t.Fatalf("InitShape %+v (%v), want %+v", shape, err, m.Config)
	}

	cfg := tinyConfig(t, tinyDataset(t))
	cfg.InitFrom, cfg.BlockSize = hf, 8 // the export has 16 positions
	tr, err := NewTrainer(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	got := tr.Model()
	for _, ti := range got.Tensors {
		a, b := got.Tensor(got.ReadParams(), ti.Name), m.Tensor(m.ReadParams(), ti.Name)
		for i := range a {
			want := b[i]
			if ti.Name == "transformer.wte.weight" && i >= m.Config.VocabSize*m.Config.NEmbd {
				want = 0
			}
			if math.Float32bits(a[i]) != math.Float32bits(want) {
				t.Fatalf("%s[%d] = %g, want %g", ti.Name, i, a[i], want)
			}
		}
	}

	wide := tinyConfig(t, tinyDataset(t))
	wide.InitFrom, wide.NEmbd = hf, 32
	// The keys that differ are named, with the flags giving the weights' values, and a
	// smaller block_size (allowed: wpe is cropped) is not among them (it named none).
	if _, err := NewTrainer(context.Background(), wide, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "init_from") ||
		!strings.Contains(err.Error(), "(n_embd 16 → 32)") || !strings.Contains(err.Error(), "--n-embd=16") {
		t.Errorf("init_from with another shape: %v, want the change named", err)
	}
	long := tinyConfig(t, tinyDataset(t))
	long.InitFrom, long.BlockSize = hf, 32
	if _, err := NewTrainer(context.Background(), long, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "(block_size 16 → 32)") {
		t.Errorf("init_from with a longer block_size than the weights': %v, want a refusal naming it", err)
	}
}

// nanoGPT's init_from values, where no directory has their name, say what to do
// here instead.
func TestInitFromNanoGPTValues(t *testing.T) {
	for value, want := range map[string]string{"scratch": "leave init_from unset", "resume": "running the same command again", "gpt2-xl": "openai-community/gpt2-xl"} {
		_, err := InitShape(value)
		if err == nil || !strings.Contains(err.Error(), "nanoGPT's init_from") || !strings.Contains(err.Error(), want) {
			t.Errorf("init_from %s: %v, want a hint with %q", value, err, want)
		}
	}
}

// TestExportHFMatchesWhole: ExportHF, which reads the weights tensor by tensor as
// model.safetensors is written (from a device, each downloaded into one buffer),
// writes the directory that hfgpt2.Export writes from all the weights read first (as
// it did): byte for byte, on the CPU and on the fake device, with and without biases
// (wte's padding rows, not zero here, left out).
func TestExportHFMatchesWhole(t *testing.T) {
	for _, fake := range []bool{false, true} {
		for _, bias := range []bool{true, false} {
			var be kernels.Backend = cpu.New(1)
			if fake {
				be = newFakeDevice()
			}
			m := tinyModel(t, be, bias, 3)
			streamed, whole := filepath.Join(t.TempDir(), "hf"), t.TempDir()
			if err := ExportHF(streamed, m, nil); err != nil {
				t.Fatal(err)
			}
			if err := hfgpt2.Export(whole, hfConfig(m, nil), m.tensorsOf(m.ReadParams(), "")); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{hfgpt2.WeightsName, hfgpt2.ConfigName} {
				a, errA := os.ReadFile(filepath.Join(streamed, name))
				b, errB := os.ReadFile(filepath.Join(whole, name))
				if errA != nil || errB != nil || !bytes.Equal(a, b) {
					t.Errorf("fake device %v, bias %v: ExportHF's %s (%d bytes, %v) is not the whole weights' (%d bytes, %v)", fake, bias, name, len(a), errA, len(b), errB)
				}
			}
		}
	}
}

// TestExportHFMemory: ExportHF holds about two of the model's largest tensor beyond
// the model (the file's buffer and a Conv1D weight's transpose): the heap grows by
// under a sixth of the weights' size, on the CPU and on the fake device. It grew by
// the weights' size on the CPU (transposed copies of the Conv1D weights, most of
// them) and twice that on a device (a copy of all the weights downloaded first).
// 25M parameters.
func TestExportHFMemory(t *testing.T) {
	for _, fake := range []bool{false, true} {
		var be kernels.Backend = cpu.New(1)
		if fake {
			be = newFakeDevice()
		}
		mc := ModelConfig{VocabSize: 65, PaddedVocab: PaddedVocab(65), NLayer: 8, NHead: 8, NEmbd: 512, BlockSize: 64, Bias: true}
		m, err := NewModel(be, mc)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		be.Sync()
		dir := t.TempDir()
		peak, allocated := heapPeak(func() { err = ExportHF(dir, m, nil) })
		if err != nil {
			t.Fatal(err)
		}
		weights := uint64(4 * m.Params.Len())
		t.Logf("export of %d parameters, fake device %v (weights %d MB): heap grew %d MB at most, %d MB allocated",
			m.Params.Len(), fake, weights>>20, peak>>20, allocated>>20)
		if peak > weights/6 {
			t.Errorf("export, fake device %v: the heap grew by %d MB, over a sixth of the %d MB of weights", fake, peak>>20, weights>>20)
		}
		m.Close()
	}
}

// TestInitFromMemory: init_from puts each tensor into its place as it is read: on the
// CPU the heap grows by under a sixth of the weights (the file's buffer of its
// largest tensor and a transposed one), on the fake device by about the weights
// (its Upload keeps a copy of each until the host waits) and a sixth; the weights
// are the exported ones, bit for bit. It grew by 3 times the weights on the CPU (all
// the tensors read, the Conv1D weights transposed into copies, and a copy laid out
// like the weights), 4 times on the device. 25M parameters. (wte's padding rows,
// which an export leaves out, come back zero.)
func TestInitFromMemory(t *testing.T) {
	data := tinyDataset(t)
	for _, fake := range []bool{false, true} {
		cfg := tinyConfig(t, data)
		cfg.NLayer, cfg.NHead, cfg.NEmbd = 8, 8, 512 // 25M parameters
		cfg.BatchSize, cfg.GradAccum, cfg.EvalSteps, cfg.Dropout = 1, 1, 0, 0
		var be kernels.Backend = cpu.New(1)
		if fake {
			be = newFakeDevice()
		}
		tr := newRanks(t, cfg, 1, func() kernels.Backend { return be })[0]
		hf := filepath.Join(t.TempDir(), "hf")
		if err := ExportHF(hf, tr.model, nil); err != nil {
			t.Fatal(err)
		}
		want := append([]float32(nil), tr.model.ReadParams()...)
		tr.model.Init(99) // other weights, which init_from replaces
		be.Sync()
		var err error
		peak, allocated := heapPeak(func() { err = tr.initFrom(hf) })
		if err != nil {
			t.Fatal(err)
		}
		weights := uint64(4 * tr.model.Params.Len())
		t.Logf("init_from of %d parameters, fake device %v (weights %d MB): heap grew %d MB at most, %d MB allocated",
			tr.model.Params.Len(), fake, weights>>20, peak>>20, allocated>>20)
		limit := weights / 6
		if fake {
			limit += weights
		}
		if peak > limit {
			t.Errorf("init_from, fake device %v: the heap grew by %d MB, over %d MB", fake, peak>>20, limit>>20)
		}
		got := tr.model.ReadParams()
		for _, ti := range tr.model.Tensors {
			for i := ti.Offset; i < ti.Offset+ti.Size; i++ {
				if ti.Name == "transformer.wte.weight" && i-ti.Offset >= tr.model.Config.VocabSize*tr.model.Config.NEmbd {
					want[i] = 0 // (the padding rows: not exported, zero)
				}
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("fake device %v: %s[%d] = %g after init_from, want %g", fake, ti.Name, i-ti.Offset, got[i], want[i])
				}
			}
		}
	}
}

// TestInitFromDamagedData: data recording the tokenizer init_from's weights were
// trained with (checked before it is opened) holding an id outside that vocabulary
// (25 of 20: damage) was told to "tokenize the data with the tokenizer the weights
// were trained with", the one it was tokenized with; now it is told the data is
// damaged, and that shards verify finds where.
func TestInitFromDamagedData(t *testing.T) {
	m, st := trainedTiny(t)
	hf := filepath.Join(t.TempDir(), "hf")
	if err := ExportHF(hf, m, st); err != nil {
		t.Fatal(err)
	}
	train := patternDoc(6000, 20, 1)
	train[100] = 25
	cfg := tinyConfig(t, writeTinyDataset(t, t.TempDir(), train, patternDoc(1500, 20, 2), 20, "tiny-fp-1"))
	cfg.InitFrom, cfg.BlockSize, cfg.MaxSteps = hf, 8, 2
	_, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err == nil {
		t.Fatal("id 25 in data of a 20-token tokenizer: trained")
	}
	if msg := err.Error(); strings.Contains(msg, "tokenize the data with") || !strings.Contains(msg, "damaged") || !strings.Contains(msg, "shards verify") {
		t.Errorf("error = %v, want the damaged-data hint (shards verify), not to tokenize otherwise", err)
	}
}
