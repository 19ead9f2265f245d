package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/storage"
	"gptkit/tokenize"
)

// TestStoreTokenizerBesideNoCopy: a downloaded tokenizer whose tokenizer.json, written
// and loaded back, gives another fingerprint is not stored beside the data, with a
// warning that names it and says decoding needs --tokenizer again; the command goes on
// (it failed: a convenience copy cost the user the run). A store that cannot be
// written still fails.
func TestStoreTokenizerBesideNoCopy(t *testing.T) {
	ctx := context.Background()
	train := func(vocab int) *tokenize.Tokenizer {
		tok, err := tokenize.Train(ctx, tokenize.TrainTexts([]string{strings.Repeat("the cat sat on the mat. ", 50)}),
			tokenize.TrainOptions{VocabSize: vocab, Special: []string{"<|endoftext|>"}})
		if err != nil {
			t.Fatal(err)
		}
		bpe, err := tok.Tokenizer("my-bpe")
		if err != nil {
			t.Fatal(err)
		}
		return bpe
	}
	tok, other := train(270), train(265)
	orig := writeHFJSON
	defer func() { writeHFJSON = orig }()
	writeHFJSON = func(_ *tokenize.Tokenizer, w io.Writer) error { return other.WriteHFJSON(w) }

	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	keys, wrote, err := StoreTokenizerBeside(ctx, st, "me/my-bpe", tok, nil, log)
	if err != nil || len(keys) != 0 || len(wrote) != 0 {
		t.Fatalf("keys %v, wrote %v, err %v", keys, wrote, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("stored %v", ents)
	}
	if w := logs.String(); !strings.Contains(w, "level=WARN") || !strings.Contains(w, "me/my-bpe") || !strings.Contains(w, "--tokenizer") {
		t.Errorf("warning: %s", w)
	}

	// A tokenizer that does give itself back, into a store that cannot take the file
	// (a directory where tokenizer.json goes: a write error even for root, who writes
	// into a read-only directory).
	writeHFJSON = orig
	blocked := t.TempDir()
	if err := os.Mkdir(filepath.Join(blocked, "tokenizer.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "tokenizer.json", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = storage.Open(ctx, blocked, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := StoreTokenizerBeside(ctx, st, "me/my-bpe", tok, nil, log); err == nil {
		t.Error("stored where a directory is in the way, without an error")
	} else {
		t.Log(err)
	}
}
