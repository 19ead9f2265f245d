package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gptkit/shards"
	"gptkit/tokenize/spec"
)

// checkInitTokenizer refuses init_from weights that were trained on another tokenizer
// than the data's, when their directory says which (train export writes
// tokenizer.json; Hugging Face's GPT-2 has one too; a tiktoken encoding's rank file,
// ENCODING.tiktoken, alone, is read as spec.ForDataset reads it beside data): a
// vocabulary of the same size would let such a run start, training on ids that mean
// other text. A directory without tokenizer files, or with files this package cannot
// read, is not checked.
func checkInitTokenizer(ctx context.Context, dir string, data shards.TokenizerInfo) error {
	if data.Fingerprint == "" {
		return nil
	}
	path := "" // what to load: dir, or its rank file where it holds no other tokenizer file
	for _, f := range spec.DatasetFiles {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.IsDir() {
			continue
		}
		// Load's choice among the files a directory holds; the rank files come last, so
		// one found first is there alone: Load reads it as a file.
		path = dir
		if strings.HasSuffix(f, ".tiktoken") {
			path = filepath.Join(dir, f)
		}
		break
	}
	if path == "" {
		return nil
	}
	tok, err := spec.Load(ctx, path, spec.Options{})
	if err != nil {
		return nil // not a tokenizer this package reads: nothing to compare
	}
	if tok.Fingerprint() == data.Fingerprint {
		return nil
	}
	holds := "holds the tokenizer"
	if path != dir {
		holds += " " + filepath.Base(path)
	}
	return fmt.Errorf("train: init_from %s %s its weights were trained with (%s, fingerprint %.12s), but the data holds ids of tokenizer %s (fingerprint %.12s): the same ids are other text to these weights\n---> HINT: tokenize the data with init_from's tokenizer (tokenize run --tokenizer %s ...), or train without init_from",
		dir, holds, tok.Name(), tok.Fingerprint(), data.Name, data.Fingerprint, path)
}
