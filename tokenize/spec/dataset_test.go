package spec

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/tokenize"
)

func TestForDataset(t *testing.T) {
	ctx := context.Background()
	offline := Options{CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: failingTransport{t}}}
	// A character vocabulary beside the data.
	dir := t.TempDir()
	writeChars(t, dir, "hello world")
	chars, err := Load(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ForDataset(ctx, dir, "shakespeare-char", chars.Fingerprint(), offline)
	if err != nil || tok.Fingerprint() != chars.Fingerprint() {
		t.Fatalf("chars.json beside the data: %v", err)
	}
	// A known name, with no network.
	gpt2, err := Load(ctx, "gpt2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := ForDataset(ctx, t.TempDir(), "gpt2", gpt2.Fingerprint(), offline); err != nil || tok.Fingerprint() != gpt2.Fingerprint() {
		t.Fatalf("gpt2 by name: %v", err)
	}
	// Neither: the error says what was tried.
	_, err = ForDataset(ctx, dir, "gpt2", tokenize.NewNeoXChar().Fingerprint(), offline)
	for _, want := range []string{"chars.json has fingerprint", "the known gpt2 has fingerprint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if _, err := ForDataset(ctx, "", "mine", "abc", offline); err == nil || !strings.Contains(err.Error(), `"mine" is not a known tokenizer name`) {
		t.Errorf("unknown name: %v", err)
	}
}

// TestForDatasetTiktoken: a .tiktoken rank file of its own stored beside the data
// (ENCODING.tiktoken: the built-in encoding's name, not its fingerprint) is found
// there; only the built-in of that name was tried.
func TestForDatasetTiktoken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var ranks bytes.Buffer
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	fmt.Fprintf(&ranks, "%s 256\n", base64.StdEncoding.EncodeToString([]byte("th")))
	path := filepath.Join(dir, "cl100k_base.tiktoken")
	if err := os.WriteFile(path, ranks.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	own, err := Load(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ForDataset(ctx, dir, own.Name(), own.Fingerprint(), Options{})
	if err != nil || tok.Fingerprint() != own.Fingerprint() {
		t.Fatalf("cl100k_base.tiktoken beside the data: %v", err)
	}
	// Stored as o200k_base.tiktoken beside a user's copy of another encoding's file
	// (kept: never stored, so not a stale one), which readers try first: each is
	// tried (the first's fingerprint ended the search, and the built-in o200k_base's
	// did not match either).
	os.Rename(path, filepath.Join(dir, "o200k_base.tiktoken"))
	own, err = Load(ctx, filepath.Join(dir, "o200k_base.tiktoken"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, bytes.Replace(ranks.Bytes(), []byte(" 256\n"), []byte(" 257\n"), 1), 0o644)
	tok, err = ForDataset(ctx, dir, own.Name(), own.Fingerprint(), Options{})
	if err != nil || tok.Fingerprint() != own.Fingerprint() {
		t.Fatalf("o200k_base.tiktoken beside cl100k_base.tiktoken: %v", err)
	}
}

// TestForDatasetNameNotPath: the manifest's name means the built-in tokenizer, even
// where the working directory holds a file or directory of that name (a dataset
// directory ./gpt2, which holds no tokenizer): ForDataset read it as the tokenizer's
// path and failed ("directory gpt2 holds no tokenizer").
func TestForDatasetNameNotPath(t *testing.T) {
	ctx := context.Background()
	gpt2, err := Load(ctx, "gpt2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "gpt2"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	tok, err := ForDataset(ctx, "", "gpt2", gpt2.Fingerprint(), Options{})
	if err != nil || tok.Fingerprint() != gpt2.Fingerprint() {
		t.Fatalf("gpt2 by name beside a directory ./gpt2: %v", err)
	}
}

// TestForDatasetEachFile: the tokenizer stored beside the data (chars.json) is found
// beside a tokenizer.json of the user's (the directory --tokenizer DIR/chars.json
// named, kept as the user's own), one that loads as another tokenizer or one that
// does not load: ForDataset loaded the directory as Load does, which takes
// tokenizer.json first, so chars.json was never tried ("no tokenizer with the
// fingerprint ...: DIR/tokenizer.json has fingerprint ..."), and Beside (train sample
// of a blend) took tokenizer.json for the data's.
func TestForDatasetEachFile(t *testing.T) {
	ctx := context.Background()
	gpt2, err := os.ReadFile(testfiles.Path(t, "tokenizers/gpt2/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range [][]byte{gpt2, []byte(`{"model": {"type": "WordPiece", "vocab": {}}}`)} {
		dir := t.TempDir()
		chars, err := Load(ctx, writeChars(t, dir, "hello world"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "tokenizer.json"), other, 0o644)
		tok, err := ForDataset(ctx, dir, "mine", chars.Fingerprint(), Options{})
		if err != nil || tok.Fingerprint() != chars.Fingerprint() {
			t.Errorf("chars.json beside a tokenizer.json (%.30s...): %v", other, err)
		}
		tok, path, err := Beside(ctx, dir, chars.Fingerprint())
		if err != nil || tok == nil || tok.Fingerprint() != chars.Fingerprint() || filepath.Base(path) != "chars.json" {
			t.Errorf("Beside: %s, %v (want chars.json)", path, err)
		}
	}
}
