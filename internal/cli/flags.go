package cli

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// The flag sets several commands share, each defined once here so that a name means one
// thing everywhere: --s3-endpoint and --s3-path-style reach S3, --cache-dir is where
// verified local copies of S3 shards live, and the --tokenizer* flags pick a tokenizer
// (--tokenizer-cache-dir is where downloaded tokenizer files live).

// S3Flags are --s3-endpoint and --s3-path-style.
type S3Flags struct {
	Endpoint  string
	PathStyle bool
}

// Register adds the flags to fs.
func (f *S3Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Endpoint, "s3-endpoint", "", "S3 endpoint `URL` for S3-compatible servers (default $AWS_ENDPOINT_URL_S3, else AWS)")
	fs.BoolVar(&f.PathStyle, "s3-path-style", false, "address S3 buckets path-style (automatic for IP and localhost endpoints)")
}

// Open opens the store at location (a directory, created if missing, or s3://...).
func (f *S3Flags) Open(ctx context.Context, location string, log *slog.Logger) (storage.Store, error) {
	return storage.Open(ctx, location, storage.Options{S3Endpoint: f.Endpoint, S3PathStyle: f.PathStyle, Logger: log})
}

// RegisterCacheDir adds --cache-dir, the directory of verified local copies of S3
// shards (storage.Fetch), to fs; more says what else the command keeps there.
func RegisterCacheDir(fs *flag.FlagSet, dir *string, more string) {
	usage := "`DIR` keeping verified local copies of S3 shards (local datasets are read in place)"
	if more != "" {
		usage += ", and " + more
	}
	fs.StringVar(dir, "cache-dir", storage.DefaultCacheDir(), usage)
}

// TokenizerFlags are --tokenizer and the flags that say where a named tokenizer comes
// from when it is not the built-in copy.
type TokenizerFlags struct {
	Spec     string // --tokenizer
	URL      string // --tokenizer-url
	SHA256   string // --tokenizer-sha256
	CacheDir string // --tokenizer-cache-dir
}

// Register adds --tokenizer (what says what it is for, and its default) and
// --tokenizer-url, --tokenizer-sha256 and --tokenizer-cache-dir to fs.
func (f *TokenizerFlags) Register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.Spec, "tokenizer", "", what+"; `SPEC` is a tokenizer.json, a directory holding one (or vocab.json+merges.txt, or chars.json), a .tiktoken file, a built-in name ("+strings.Join(spec.Names(), ", ")+"), a Hugging Face id ORG/NAME or an http(s) URL")
	fs.StringVar(&f.URL, "tokenizer-url", "", "download the named tokenizer from this `URL` instead of using the built-in copy (gpt2, r50k_base: a base URL that /vocab.json and /merges.txt are appended to)")
	fs.StringVar(&f.SHA256, "tokenizer-sha256", "", "expected sha256 `HEX` of the downloaded tokenizer file instead of the canonical one (gpt2, r50k_base: VOCAB,MERGES); implies a download")
	fs.StringVar(&f.CacheDir, "tokenizer-cache-dir", "", "`DIR` keeping downloaded tokenizer files (empty: $GPTKIT_CACHE/tokenizers, else the user cache directory's gptkit/tokenizers)")
}

// Options are the spec.Options the flags ask for, logging downloads to log.
func (f *TokenizerFlags) Options(log *slog.Logger) spec.Options {
	return spec.Options{CacheDir: f.CacheDir, URL: f.URL, SHA256: f.SHA256, Logger: log}
}

// Load resolves --tokenizer, or def when it is empty.
func (f *TokenizerFlags) Load(ctx context.Context, def string, log *slog.Logger) (*tokenize.Tokenizer, error) {
	s := f.Spec
	if s == "" {
		s = def
	}
	return spec.Load(ctx, s, f.Options(log))
}
