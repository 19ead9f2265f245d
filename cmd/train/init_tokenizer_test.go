package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/shards"
	"gptkit/tokenize/embedded"
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
	// A directory holding cl100k_base's rank file alone (which spec.Load does not read
	// as a directory: it was not checked) is checked as that file.
	ranks, err := embedded.Read("cl100k_base", "cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	tk := t.TempDir()
	file := filepath.Join(tk, "cl100k_base.tiktoken")
	if err := os.WriteFile(file, ranks, 0o644); err != nil {
		t.Fatal(err)
	}
	err = checkInitTokenizer(ctx, tk, data)
	if err == nil || !strings.Contains(err.Error(), "holds the tokenizer cl100k_base.tiktoken") || !strings.Contains(err.Error(), "ids of tokenizer gpt2") || !strings.Contains(err.Error(), "--tokenizer "+file) {
		t.Errorf("cl100k_base.tiktoken alone against data of gpt2: %v, want a refusal naming the file", err)
	}
	cl100k, err := spec.Load(ctx, "cl100k_base", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInitTokenizer(ctx, tk, shards.TokenizerInfo{Name: cl100k.Name(), Fingerprint: cl100k.Fingerprint()}); err != nil {
		t.Errorf("cl100k_base.tiktoken alone against data of cl100k_base: %v", err)
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

// TestInitFromCharWeightsOnGPT2Data: weights trained on a byte-level character
// tokenizer (the built-in char: export writes no tokenizer.json for it) do not start a
// run on data of GPT-2 ids, and the refusal names both tokenizers and what to do
// (it failed at the first token id outside the weights' vocabulary, naming neither).
// An export that does not record its tokenizer (an older one) is refused by its
// vocabulary, naming the data's tokenizer.
func TestInitFromCharWeightsOnGPT2Data(t *testing.T) {
	ctx := context.Background()
	text := charText(8000)
	char, err := spec.Load(ctx, "char", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gpt2, err := spec.Load(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, hf := trainAndExport(t, makeTokenDataset(t, char, text))
	if _, err := os.Stat(filepath.Join(hf, "tokenizer.json")); err == nil {
		t.Fatalf("export wrote a tokenizer.json for %s: the case is not tested", char.Name())
	}
	data := makeTokenDataset(t, gpt2, text)
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"--data", data, "--out", out, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "2", "--init-from", hf, "--cache-dir", out + "-cache"}
	code, _, stderr := runTrain(t, args...)
	for _, want := range []string{"init_from " + hf + " was trained on the ids of tokenizer " + char.Name(), "holds ids of tokenizer " + gpt2.Name(), "---> HINT: tokenize the data with the tokenizer the weights were trained with"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("--init-from char weights on gpt2 data: exit %d, want 1 and %q: %s", code, want, stderr)
		}
	}

	// Without the record (config.json's gptkit.tokenizer): by the vocabulary.
	cj, err := os.ReadFile(filepath.Join(hf, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.SplitSeq(string(cj), "\n") {
		if !strings.Contains(line, `"tokenizer`) {
			lines = append(lines, line)
		}
	}
	if err := os.WriteFile(filepath.Join(hf, "config.json"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runTrain(t, append(args, "--out", out+"2")...)
	for _, want := range []string{"init_from " + hf + " was trained on a tokenizer of " + strconv.Itoa(char.VocabSize()) + " tokens", "holds ids of tokenizer " + gpt2.Name(), "---> HINT: "} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("--init-from char weights (tokenizer not recorded) on gpt2 data: exit %d, want 1 and %q: %s", code, want, stderr)
		}
	}
}

// TestInitFromOnBareShards: bare GPT-NeoX shards (no manifest: no tokenizer recorded)
// of GPT-2 ids under weights exported from a character run fail at the first id
// outside the weights' vocabulary, and the hint says that the data's tokenizer is
// unknown, names init_from's tokenizer and its vocabulary, and how to tokenize the text
// with it (it said the weights "were trained on another tokenizer's ids", naming
// neither and no way on).
func TestInitFromOnBareShards(t *testing.T) {
	ctx := context.Background()
	chars, tok := makeCharDataset(t)
	_, hf := trainAndExport(t, chars)
	gpt2, err := spec.Load(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := makeTokenDataset(t, gpt2, charText(8000))
	if err := os.Remove(filepath.Join(dir, shards.ManifestName)); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "c_text_document")
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runTrain(t, "--data", data, "--out", out, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "0", "--init-from", hf, "--cache-dir", out+"-cache")
	for _, want := range []string{
		"is outside the vocabulary",
		data + " records no tokenizer (no manifest.json",
		"init_from " + hf + " was trained on tokenizer " + tok.Name() + " (vocab_size " + strconv.Itoa(tok.VocabSize()),
		"tokenize run --tokenizer " + hf,
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("--init-from char weights on bare gpt2 shards: exit %d, want 1 and %q: %s", code, want, stderr)
		}
	}
}
