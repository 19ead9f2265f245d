package main

import (
	"context"
	"io"
	"log/slog"
	"runtime/debug"

	"gptkit/internal/cli"
	"gptkit/tokenize"
)

// tokenizerFlags pick the tokenizer (the flag set all commands share, internal/cli);
// encode, decode and run take them.
type tokenizerFlags struct{ cli.TokenizerFlags }

// load resolves the tokenizer, logging downloads to stderr. The garbage collector is
// off meanwhile: loading allocates its tables once, and collections during it (the
// heap grows from nothing to tens of MB) took as much CPU as the load itself.
func (tf *tokenizerFlags) load(ctx context.Context, stderr io.Writer) (*tokenize.Tokenizer, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return tf.Load(ctx, "", slog.New(slog.NewTextHandler(stderr, nil)))
}
