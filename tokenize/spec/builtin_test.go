package spec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"gptkit/tokenize"
)

// TestBuiltinVocabSizes: each built-in's recorded vocabSize is what it loads with, so
// asBuiltin's gate by size never hides a copy of it.
func TestBuiltinVocabSizes(t *testing.T) {
	for _, named := range namedTokenizers {
		if named.build == nil {
			continue
		}
		tok, err := loadEmbedded(named)
		if err != nil {
			t.Fatal(err)
		}
		if tok.VocabSize() != named.vocabSize {
			t.Errorf("%s: vocabSize %d recorded, loads with %d", named.name, named.vocabSize, tok.VocabSize())
		}
	}
}

// TestLoadTrainedLoadsNoBuiltin: a tokenizer of its own given by path (a character
// vocabulary here) is told apart from the built-ins by its size alone: none of them is
// loaded to compare fingerprints (all five took ~100 ms of every such command).
func TestLoadTrainedLoadsNoBuiltin(t *testing.T) {
	trained, err := tokenize.Train(context.Background(), tokenize.TrainTexts([]string{"the cat sat on the mat, the cat sat on the hat"}),
		tokenize.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := trained.WriteHFJSON(&js); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	builtinPrintsMu.Lock()
	clear(builtinPrintsByName)
	builtinPrintsMu.Unlock()
	tok, err := Load(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if IsBuiltin(tok) {
		t.Fatalf("%s taken for a built-in", path)
	}
	builtinPrintsMu.Lock()
	defer builtinPrintsMu.Unlock()
	if len(builtinPrintsByName) != 0 {
		t.Fatalf("loading %s (%d tokens) loaded built-ins to compare: %v", path, tok.VocabSize(), builtinPrintsByName)
	}
}
