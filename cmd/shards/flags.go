package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strings"

	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// storageFlags say how to reach the stores a command reads and writes.
type storageFlags struct {
	endpoint  string
	pathStyle bool
	cacheDir  string
	log       *slog.Logger
}

// register adds --s3-endpoint and --s3-path-style and, with cache (commands that map
// shards), --cache-dir.
func (sf *storageFlags) register(fs *flag.FlagSet, cache bool) {
	fs.StringVar(&sf.endpoint, "s3-endpoint", "", "S3 endpoint `URL` for S3-compatible servers (default $AWS_ENDPOINT_URL_S3, else AWS)")
	fs.BoolVar(&sf.pathStyle, "s3-path-style", false, "address S3 buckets path-style (automatic for IP and localhost endpoints)")
	if cache {
		fs.StringVar(&sf.cacheDir, "cache-dir", storage.DefaultCacheDir(), "`DIR` keeping verified local copies of S3 shards for memory-mapping (local datasets are mapped in place)")
	}
}

// open opens the store at location (a directory, created if missing, or s3://...).
func (sf *storageFlags) open(ctx context.Context, location string) (storage.Store, error) {
	return storage.Open(ctx, location, storage.Options{S3Endpoint: sf.endpoint, S3PathStyle: sf.pathStyle, Logger: sf.log})
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
type tokenizerFlags struct {
	spec     string
	cacheDir string
}

// register adds --tokenizer, described by what, and --tokenizer-cache-dir.
func (tf *tokenizerFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&tf.spec, "tokenizer", "", what+"; `SPEC` is a tokenizer.json, a directory holding one (or vocab.json+merges.txt, or chars.json), a .tiktoken file, or a name: "+strings.Join(spec.Names(), ", "))
	fs.StringVar(&tf.cacheDir, "tokenizer-cache-dir", "", "`DIR` caching named tokenizers (empty: $GPTKIT_CACHE/tokenizers, else the user cache directory's gptkit/tokenizers)")
}

// load resolves name (a SPEC), logging downloads to stderr.
func (tf *tokenizerFlags) load(ctx context.Context, name string, stderr io.Writer) (*tokenize.Tokenizer, error) {
	return spec.Load(ctx, name, spec.Options{CacheDir: tf.cacheDir, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
}

// tokenizerInfo is the manifest's description of tok.
func tokenizerInfo(tok *tokenize.Tokenizer) shards.TokenizerInfo {
	return shards.TokenizerInfo{Name: tok.Name(), Fingerprint: tok.Fingerprint(), VocabSize: tok.VocabSize(), EODID: tok.EOD()}
}

// newLogger is the logger commands hand to libraries: text lines on stderr.
func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}
