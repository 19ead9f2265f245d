package main

import (
	"os"
	"path/filepath"
	"testing"

	"gptkit/tokenize"
)

// A merge refused because OUT already holds a dataset must leave that dataset alone:
// here it overwrites, then deletes, OUT's chars.json.
func TestMergeRefusedKeepsOutCharsJSON(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	info := tokenizerInfo(tokenize.NewNeoXChar())
	writeDataset(t, in, info, [][]int{{104, 105, 0}})
	writeDataset(t, out, info, [][]int{{1, 2, 0}})
	inVocab := []byte(`{"type": "char", "chars": ["a", "b"]}` + "\n")
	outVocab := []byte(`{"type": "char", "chars": ["x", "y"]}` + "\n")
	os.WriteFile(filepath.Join(in, "chars.json"), inVocab, 0o644)
	os.WriteFile(filepath.Join(out, "chars.json"), outVocab, 0o644)

	wantFailure(t, 1, []string{"already has a manifest.json"}, "merge", out, in)
	got, err := os.ReadFile(filepath.Join(out, "chars.json"))
	if err != nil || string(got) != string(outVocab) {
		t.Fatalf("OUT's chars.json after the refused merge: %q, %v; want it unchanged %q", got, err, outVocab)
	}
}

// `shards merge A A` (output = an input) is refused, and must not delete A's vocabulary.
func TestMergeIntoInputKeepsCharsJSON(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a")
	writeDataset(t, a, tokenizerInfo(tokenize.NewNeoXChar()), [][]int{{104, 105, 0}})
	vocab := []byte(`{"type": "char", "chars": ["a", "b"]}` + "\n")
	os.WriteFile(filepath.Join(a, "chars.json"), vocab, 0o644)
	wantFailure(t, 1, []string{"already has a manifest.json"}, "merge", a, a)
	if _, err := os.Stat(filepath.Join(a, "chars.json")); err != nil {
		t.Fatalf("the input's chars.json after a refused merge: %v", err)
	}
}

// TestMergeCopiesTokenizerJSON: the tokenizer files beside the first input (a
// tokenizer.json, as tokenize run stores one of local files) come along into OUT, as
// chars.json did alone; a refused merge leaves none behind.
func TestMergeCopiesTokenizerJSON(t *testing.T) {
	root := t.TempDir()
	a, out := filepath.Join(root, "a"), filepath.Join(root, "out")
	info := tokenizerInfo(tokenize.NewNeoXChar())
	writeDataset(t, a, info, [][]int{{104, 105, 0}})
	tj := []byte(`{"model": {"type": "BPE"}}` + "\n") // copied as it is, not read
	os.WriteFile(filepath.Join(a, "tokenizer.json"), tj, 0o644)
	mustRun(t, "merge", out, a)
	if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || string(got) != string(tj) {
		t.Fatalf("OUT's tokenizer.json: %q, %v; want %q", got, err, tj)
	}
	other := filepath.Join(root, "other")
	writeDataset(t, other, tokenizerInfo(gpt2(t)), [][]int{{1, 2, 50256}})
	bad := filepath.Join(root, "bad")
	wantFailure(t, 1, []string{"incompatible"}, "merge", bad, a, other)
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("a refused merge left %s", bad)
	}
}

// TestMergeCopiesTokenizerOfALaterInput: the first input has no tokenizer file beside
// it (made before they were stored, or with its tokenizer given by name elsewhere) and
// a later one, of the same fingerprint, does: OUT gets that one's.
func TestMergeCopiesTokenizerOfALaterInput(t *testing.T) {
	root := t.TempDir()
	a, b, out := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "out")
	info := tokenizerInfo(tokenize.NewNeoXChar())
	writeDataset(t, a, info, [][]int{{104, 105, 0}})
	writeDataset(t, b, info, [][]int{{106, 0}})
	tj := []byte(`{"model": {"type": "BPE"}}` + "\n")
	os.WriteFile(filepath.Join(b, "tokenizer.json"), tj, 0o644)
	mustRun(t, "merge", out, a, b)
	if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || string(got) != string(tj) {
		t.Errorf("OUT's tokenizer.json: %q, %v; want the second input's %q", got, err, tj)
	}
}
