package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gptkit/shards"
	"gptkit/tokenize/spec"
)

// checkInitTokenizer refuses init_from weights that were trained on another tokenizer
// than the data's, when their directory says which (train export writes
// tokenizer.json; Hugging Face's GPT-2 has one too): a vocabulary of the same size
// would let such a run start, training on ids that mean other text. A directory
// without tokenizer files, or with files this package cannot read, is not checked.
func checkInitTokenizer(ctx context.Context, dir string, data shards.TokenizerInfo) error {
	if data.Fingerprint == "" {
		return nil
	}
	has := false
	for _, f := range spec.DatasetFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	tok, err := spec.Load(ctx, dir, spec.Options{})
	if err != nil {
		return nil // not a tokenizer this package reads: nothing to compare
	}
	if tok.Fingerprint() == data.Fingerprint {
		return nil
	}
	return fmt.Errorf("train: init_from %s holds the tokenizer its weights were trained with (%s, fingerprint %.12s), but the data holds ids of tokenizer %s (fingerprint %.12s): the same ids are other text to these weights\n---> HINT: tokenize the data with init_from's tokenizer (tokenize run --tokenizer %s ...), or train without init_from",
		dir, tok.Name(), tok.Fingerprint(), data.Name, data.Fingerprint, dir)
}
