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
