package train

import (
	"context"
	"path/filepath"
	"testing"

	"gptkit/internal/opencount"
	"gptkit/kernels/ref"
	"gptkit/shards"
	"gptkit/train/hfgpt2"
)

// TestInitFromReadsOnce: a run started from a Hugging Face directory reads its
// config.json and model.safetensors' header once, and checks its tokenizer files
// against the data's once (cfg.CheckInitTokenizer, which reads them). It read the
// config.json and the header three times (to check the tokenizer before the data is
// opened, to check the shape, to read the weights) and checked the tokenizer twice
// (before the data is opened and after).
func TestInitFromReadsOnce(t *testing.T) {
	m, st := trainedTiny(t)
	hf := filepath.Join(t.TempDir(), "hf")
	if err := ExportHF(hf, m, st); err != nil {
		t.Fatal(err)
	}
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.InitFrom, cfg.BlockSize = hf, 8
	checks := 0
	cfg.CheckInitTokenizer = func(string, shards.TokenizerInfo) error { checks++; return nil }
	configOpens, weightOpens := opencount.Watch(t, hfgpt2.ConfigName, hf), opencount.Watch(t, hfgpt2.WeightsName, hf)
	tr, err := NewTrainer(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if c, w := configOpens(), weightOpens(); c != 1 || w != 1 {
		t.Errorf("init_from opened %s %d times and %s %d times, want once each", hfgpt2.ConfigName, c, hfgpt2.WeightsName, w)
	}
	if checks != 1 {
		t.Errorf("init_from's tokenizer checked %d times, want once", checks)
	}
	if tr.init != nil {
		t.Errorf("init_from's %s left open", hfgpt2.WeightsName)
	}
}

// TestInitFromReadsDataManifestOnce: a run started from init_from reads the data's
// manifest.json once: to check the data's tokenizer against init_from's, and, handed
// to the loader (loader.Options.Manifests), to open the data. It read it twice, the
// loader reading it again (on S3, one GET more).
func TestInitFromReadsDataManifestOnce(t *testing.T) {
	m, st := trainedTiny(t)
	hf := filepath.Join(t.TempDir(), "hf")
	if err := ExportHF(hf, m, st); err != nil {
		t.Fatal(err)
	}
	data := tinyDataset(t)
	cfg := tinyConfig(t, data)
	cfg.InitFrom, cfg.BlockSize = hf, 8
	manifestOpens := opencount.Watch(t, shards.ManifestName, data)
	tr, err := NewTrainer(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if n := manifestOpens(); n != 1 {
		t.Errorf("the data's %s opened %d times, want once", shards.ManifestName, n)
	}
}
