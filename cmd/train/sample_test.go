package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/shards"
)

// TestSamplePartOfPartitionedRun: a model trained on one part of a partitioned run
// (DIR/parts/part-00000-of-00002, whose character tokenizer tokenize run keeps once, at
// DIR) samples without --tokenizer, and export writes that tokenizer: they looked only
// in the part ("no tokenizer with the fingerprint ..."), as shards cat --decode did
// before it took shards.PartParent.
func TestSamplePartOfPartitionedRun(t *testing.T) {
	data, tok := makeCharDataset(t)
	run := filepath.Join(t.TempDir(), "run")
	part := filepath.Join(run, filepath.FromSlash(shards.PartDir(0, 2)))
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data, part); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(part, "chars.json"), filepath.Join(run, "chars.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runTrain(t, tinyArgs(part, out, "10")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample: exit %d, %q: %s", code, stdout, stderr)
	}
	// --data naming the part finds it too.
	code, stdout, stderr = runTrain(t, "sample", "--ckpt", out, "--data", part, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample --data PART: exit %d, %q: %s", code, stdout, stderr)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	checkExportedChars(t, hf, tok)
}
