package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/tokenize"
)

func TestMerge(t *testing.T) {
	root := t.TempDir()
	a, b, out := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "ab")
	wantA := tokenizeDataset(t, a, sampleTexts)
	wantB := [][]int{{1, 2, 50256}, {3, 50256}, {4, 5, 6, 50256}}
	writeDataset(t, b, gpt2Info(t), wantB[:1], wantB[1:])

	got := mustRun(t, "merge", out, a, b)
	want := slices.Concat(wantA, wantB)
	if line := fmt.Sprintf("%s/manifest.json: %d documents, %d tokens, 1 shards\n", out, len(want), countTokens(want)); got != line {
		t.Errorf("merge printed %q, want %q", got, line)
	}
	v := infoJSON(t, out)
	va, vb := infoJSON(t, a), infoJSON(t, b)
	if v["documents"] != va["documents"].(float64)+vb["documents"].(float64) || v["tokens"] != va["tokens"].(float64)+vb["tokens"].(float64) || v["num_shards"] != 1.0 {
		t.Errorf("merged counts %v/%v, inputs %v+%v and %v+%v", v["documents"], v["tokens"], va["documents"], vb["documents"], va["tokens"], vb["tokens"])
	}
	if p := v["shards"].([]any)[0].(map[string]any)["prefix"]; p != "ab_text_document" {
		t.Errorf("merged shard is %v, want ab_text_document", p)
	}
	mustRun(t, "verify", out)
	for k := range want {
		if ids := catIDs(t, out, k); !slices.Equal(ids, want[k]) {
			t.Errorf("merged document %d = %v, want %v", k, ids, want[k])
		}
	}

	// --prefix, and flags after the arguments.
	out2 := filepath.Join(root, "named")
	mustRun(t, "merge", out2, b, "--prefix", "mix_text_document")
	if _, err := os.Stat(filepath.Join(out2, "mix_text_document.idx")); err != nil {
		t.Error(err)
	}

	// An input given twice is merged twice, with a warning naming it (there was none);
	// distinct inputs get none.
	if _, _, errOut := runShards(t, "merge", filepath.Join(root, "ab2"), a, b); strings.Contains(errOut, "twice") {
		t.Errorf("merge of distinct inputs warned: %q", errOut)
	}
	code, got, errOut := runShards(t, "merge", filepath.Join(root, "aba"), a, b, a+"/")
	if code != 0 || !strings.Contains(got, fmt.Sprintf(": %d documents", 2*len(wantA)+len(wantB))) ||
		!strings.Contains(errOut, "an input is given twice") || !strings.Contains(errOut, "arguments=\"1 and 3\"") {
		t.Errorf("merge a b a: exit %d, stdout %q, stderr %q", code, got, errOut)
	}

	// Refusals.
	wantFailure(t, 1, []string{"already has a manifest.json"}, "merge", out, a)
	char := filepath.Join(root, "char")
	writeDataset(t, char, tokenizerInfo(tokenize.NewNeoXChar()), [][]int{{104, 105, 0}})
	wantFailure(t, 1, []string{"incompatible", "gpt2", "char", "re-tokenize"}, "merge", filepath.Join(root, "bad"), a, char)
	if _, err := os.Stat(filepath.Join(root, "bad")); err == nil {
		t.Error("a refused merge left its output directory")
	}
	wantFailure(t, 1, []string{"no such dataset directory"}, "merge", filepath.Join(root, "x"), filepath.Join(root, "missing"))
	// A bare shard's prefix is named as one (it said "no such dataset directory").
	idx, _ := filepath.Glob(filepath.Join(a, "*.idx"))
	if len(idx) == 0 {
		t.Fatal("no shard in the input dataset")
	}
	bare := strings.TrimSuffix(idx[0], ".idx")
	wantFailure(t, 1, []string{bare + " is a bare GPT-NeoX shard", "not a dataset directory"}, "merge", filepath.Join(root, "x"), bare)
	wantFailure(t, 1, []string{"is a bare GPT-NeoX shard"}, "merge", filepath.Join(root, "x"), bare+".bin")
	wantFailure(t, 2, []string{"want OUT and at least one IN"}, "merge", out)

	// A character vocabulary beside the inputs comes along (cat --decode reads it).
	vocab := []byte(`{"chars": "abc"}` + "\n")
	if err := os.WriteFile(filepath.Join(b, "chars.json"), vocab, 0o644); err != nil {
		t.Fatal(err)
	}
	out3 := filepath.Join(root, "withvocab")
	mustRun(t, "merge", out3, b)
	if got, err := os.ReadFile(filepath.Join(out3, "chars.json")); err != nil || string(got) != string(vocab) {
		t.Errorf("merged chars.json %q, %v; want the input's", got, err)
	}
}
