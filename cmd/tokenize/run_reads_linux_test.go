package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/opencount"
	"gptkit/shards"
	"gptkit/storage"
)

// TestRunReadsPreviousManifestOnce: `tokenize run` over a finished dataset reads its
// manifest.json once, for the run's check that the output is this job's, which hands
// it to the planning of the tokenizer files stored beside the data (on S3, one GET
// less). It read it twice: cli.PreviousManifest before the run, and the run's check.
// The tokenizer files are planned and stored as before, with local parts too.
func TestRunReadsPreviousManifestOnce(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte(strings.Repeat("the cat sat on the mat. ", 200)), 0o644)
	tok := filepath.Join(dir, "my-bpe.json")
	if code, _, errOut := runTokenize(t, "", "train", "--input", in, "--vocab-size", "280", "--out", tok); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errOut)
	}
	for _, extra := range [][]string{nil, {"--workers", "2", "--parts", "2"}} {
		out := filepath.Join(t.TempDir(), "ds")
		args := append([]string{"run", "--input", in, "--output", out, "--name", "x", "--tokenizer", tok, "--progress", "off"}, extra...)
		if code, _, errOut := runTokenize(t, "", args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		// Already complete: the manifest is read, nothing written.
		opens := opencount.Watch(t, shards.ManifestName, out)
		if code, _, errOut := runTokenize(t, "", args...); code != 0 {
			t.Fatalf("%v rerun: exit %d: %s", extra, code, errOut)
		}
		if n := opens(); n != 1 {
			t.Errorf("%v: the rerun over the finished dataset opened its %s %d times, want once", extra, shards.ManifestName, n)
		}
		want, _ := os.ReadFile(tok)
		if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: tokenizer.json beside the data: %d bytes (%v), want the %d of %s", extra, len(got), err, len(want), tok)
		}
		st, err := storage.Open(t.Context(), out, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := shards.ReadManifest(t.Context(), st, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Source[shards.SourceTokenizerFiles]; got == nil || len(got.([]any)) != 1 {
			t.Errorf("%v: source.tokenizer_files = %v, want [tokenizer.json]", extra, got)
		}
	}
}
