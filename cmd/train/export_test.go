package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// TestExportGPT2Tokenizer: a model trained on GPT-2 ids is exported with GPT-2's
// tokenizer.json, which loads to the tokenizer the dataset was made with, and a
// tokenizer_config.json naming its end-of-text token.
func TestExportGPT2Tokenizer(t *testing.T) {
	tok, err := spec.Load(context.Background(), "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := makeTokenDataset(t, tok, charText(6000))
	out, hf := trainAndExport(t, data)
	raw, err := os.ReadFile(filepath.Join(hf, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := tokenize.LoadHFJSON(raw, "exported")
	if err != nil {
		t.Fatal(err)
	}
	if back.Fingerprint() != tok.Fingerprint() {
		t.Errorf("the exported tokenizer.json has fingerprint %s, the dataset's tokenizer %s", back.Fingerprint(), tok.Fingerprint())
	}
	var tc map[string]any
	raw, err = os.ReadFile(filepath.Join(hf, "tokenizer_config.json"))
	if err == nil {
		err = json.Unmarshal(raw, &tc)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bos_token", "eos_token", "unk_token"} {
		if tc[k] != "<|endoftext|>" {
			t.Errorf("tokenizer_config.json %s = %v, want <|endoftext|>", k, tc[k])
		}
	}
	// A tokenizer given instead of the dataset's, with another fingerprint, gets a
	// warning; one with more tokens than the model's vocabulary is refused.
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf, "--tokenizer", "neox-20b"); code != 1 ||
		!strings.Contains(stderr, "fingerprint") || !strings.Contains(stderr, "50277 tokens, the model's vocabulary 50257") {
		t.Errorf("export --tokenizer neox-20b: exit %d, want 1, a warning on the fingerprint and the sizes: %s", code, stderr)
	}
}

// TestExportRefusesLargerTokenizer: a tokenizer with more tokens than the model's
// vocabulary cannot be its tokenizer: nothing is written.
func TestExportRefusesLargerTokenizer(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runTrain(t, tinyArgs(data, out, "2")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf, "--tokenizer", "gpt2"); code != 1 || !strings.Contains(stderr, "50257 tokens") {
		t.Errorf("export of a character model with --tokenizer gpt2: exit %d, want 1 naming the sizes: %s", code, stderr)
	}
	if _, err := os.Stat(hf); err == nil {
		t.Errorf("the refused export wrote %s", hf)
	}
}

// trainAndExport trains a tiny model on data for 2 steps and exports it; it returns
// the run and the export directories.
func trainAndExport(t *testing.T, data string) (out, hf string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runTrain(t, tinyArgs(data, out, "2")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	hf = filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	return out, hf
}
