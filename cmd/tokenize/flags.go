package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// tokenizerFlags pick the tokenizer; encode and decode share them.
type tokenizerFlags struct {
	spec     string
	url      string
	sha256   string
	cacheDir string
}

func (tf *tokenizerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.spec, "tokenizer", "", "tokenizer `SPEC` (required): a tokenizer.json, a directory holding one (or vocab.json+merges.txt, or chars.json), a .tiktoken file, or a name: "+strings.Join(spec.Names(), ", "))
	fs.StringVar(&tf.url, "tokenizer-url", "", "download a named tokenizer from this `URL` instead of the canonical one (gpt2, r50k_base: a base URL that /vocab.json and /merges.txt are appended to)")
	fs.StringVar(&tf.sha256, "tokenizer-sha256", "", "expected sha256 `HEX` of the downloaded file instead of the canonical one (gpt2, r50k_base: VOCAB,MERGES)")
	fs.StringVar(&tf.cacheDir, "cache-dir", "", "`DIR` caching named tokenizers (empty: $GPTKIT_CACHE/tokenizers, else the user cache directory's gptkit/tokenizers)")
}

// load resolves the tokenizer, logging downloads to stderr. The garbage collector is
// off meanwhile: loading allocates its tables once, and collections during it (the
// heap grows from nothing to tens of MB) took as much CPU as the load itself.
func (tf *tokenizerFlags) load(ctx context.Context, stderr io.Writer) (*tokenize.Tokenizer, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return spec.Load(ctx, tf.spec, spec.Options{
		CacheDir: tf.cacheDir,
		URL:      tf.url,
		SHA256:   tf.sha256,
		Logger:   slog.New(slog.NewTextHandler(stderr, nil)),
	})
}
