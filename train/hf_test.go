package train

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels/ref"
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
	if _, err := NewTrainer(context.Background(), wide, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "init_from") {
		t.Errorf("init_from with another shape: %v", err)
	}
	long := tinyConfig(t, tinyDataset(t))
	long.InitFrom, long.BlockSize = hf, 32
	if _, err := NewTrainer(context.Background(), long, ref.New(), Single{}, testLogger(t)); err == nil {
		t.Error("init_from with a longer block_size than the weights' accepted")
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
