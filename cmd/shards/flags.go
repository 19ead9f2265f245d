package main

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// storageFlags say how to reach the stores a command reads and writes: the shared S3
// flags and, for commands that read shards, --cache-dir.
type storageFlags struct {
	cli.S3Flags
	cacheDir string
	log      *slog.Logger
}

// register adds --s3-endpoint and --s3-path-style and, with cache (commands that read
// shards: cat, convert, verify), --cache-dir.
func (sf *storageFlags) register(fs *flag.FlagSet, cache bool) {
	sf.S3Flags.Register(fs)
	if cache {
		cli.RegisterCacheDir(fs, &sf.cacheDir, "")
	}
}

// open opens the store at location (a directory, created if missing, or s3://...).
func (sf *storageFlags) open(ctx context.Context, location string) (storage.Store, error) {
	return sf.S3Flags.Open(ctx, location, sf.log)
}

// allowMergedFlag is --allow-merged-doc-idx, for commands that read shards.
type allowMergedFlag bool

func (a *allowMergedFlag) register(fs *flag.FlagSet) {
	fs.BoolVar((*bool)(a), "allow-merged-doc-idx", false, "read shards whose doc_idx is [0] (GPT-NeoX merge_datasets.py output) as one document per sequence instead of refusing them")
}

// options are the shards.Options the flag asks for.
func (a allowMergedFlag) options() []shards.Option {
	if a {
		return []shards.Option{shards.AllowMergedDocIdx()}
	}
	return nil
}

// tokenizerFlags pick a tokenizer (cat --decode, convert --from).
type tokenizerFlags struct{ cli.TokenizerFlags }

// load resolves name (a SPEC), logging downloads to stderr.
func (tf *tokenizerFlags) load(ctx context.Context, name string, stderr io.Writer) (*tokenize.Tokenizer, error) {
	return spec.Load(ctx, name, tf.options(stderr))
}

// options are the spec.Options the flags ask for, logging downloads to stderr.
func (tf *tokenizerFlags) options(stderr io.Writer) spec.Options {
	return tf.Options(newLogger(stderr))
}

// tokenizerInfo is the manifest's description of tok.
func tokenizerInfo(tok *tokenize.Tokenizer) shards.TokenizerInfo {
	return shards.TokenizerInfo{Name: tok.Name(), Fingerprint: tok.Fingerprint(), VocabSize: tok.VocabSize(), EODID: tok.EOD()}
}

// newLogger is the logger commands hand to libraries: text lines on stderr.
func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}
