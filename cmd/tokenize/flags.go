package main

import (
	"context"
	"io"
	"log/slog"

	"gptkit/internal/cli"
	"gptkit/tokenize"
)

// tokenizerFlags pick the tokenizer (the flag set all commands share, internal/cli);
// encode, decode and run take them.
type tokenizerFlags struct{ cli.TokenizerFlags }

// load resolves the tokenizer, logging downloads to stderr.
func (tf *tokenizerFlags) load(ctx context.Context, stderr io.Writer) (*tokenize.Tokenizer, error) {
	return tf.Load(ctx, "", slog.New(slog.NewTextHandler(stderr, nil)))
}
