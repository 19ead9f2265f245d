package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/shards"
	"gptkit/tokenize/spec"
)

// TestCheckInitTokenizer: Hugging Face's own GPT-2 directory (tokenizer.json, vocab.json,
// merges.txt) is the tokenizer of data made with the built-in gpt2; NeoX's is not; a
// directory without tokenizer files is not checked.
func TestCheckInitTokenizer(t *testing.T) {
	ctx := context.Background()
	gpt2, err := spec.Load(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := shards.TokenizerInfo{Name: gpt2.Name(), Fingerprint: gpt2.Fingerprint(), VocabSize: gpt2.VocabSize(), EODID: gpt2.EOD()}
	hub := testfiles.Path(t, "tokenizers/gpt2")
	if err := checkInitTokenizer(ctx, hub, data); err != nil {
		t.Errorf("Hugging Face's gpt2 directory against data of the built-in gpt2: %v", err)
	}
	neox := testfiles.Path(t, "tokenizers/neox-20b")
	err = checkInitTokenizer(ctx, neox, data)
	if err == nil || !strings.Contains(err.Error(), "ids of tokenizer gpt2") || !strings.Contains(err.Error(), "--tokenizer "+neox) {
		t.Errorf("NeoX's directory against data of gpt2: %v, want a refusal naming both", err)
	}
	if err := checkInitTokenizer(ctx, t.TempDir(), data); err != nil {
		t.Errorf("a directory without tokenizer files: %v", err)
	}
}

// TestInitFromOtherCharacters: weights exported from a run on one text's characters
// do not start a run on another text's, even with as many characters.
func TestInitFromOtherCharacters(t *testing.T) {
	data, _ := makeCharDataset(t)
	_, hf := trainAndExport(t, data)
	upper, _ := makeCharDatasetOf(t, strings.ToUpper(charText(8000)))
	out2 := filepath.Join(t.TempDir(), "run2")
	args := []string{"--data", upper, "--out", out2, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "2", "--init-from", hf, "--cache-dir", out2 + "-cache"}
	if code, _, stderr := runTrain(t, args...); code != 1 || !strings.Contains(stderr, "holds the tokenizer its weights were trained with") {
		t.Errorf("--init-from weights of other characters: exit %d, want 1 and the tokenizers named: %s", code, stderr)
	}
	same, _ := makeCharDataset(t)
	if code, _, stderr := runTrain(t, append(args, "--data", same, "--out", out2+"b")...); code != 0 {
		t.Errorf("--init-from on data of the same characters: exit %d: %s", code, stderr)
	}
}
