package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"

	"gptkit/internal/cli"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// jobFlags are the flags `prep NAME` and `prep custom` share.
type jobFlags struct {
	dir           string
	dest          string
	tokenizer     string
	tokURL        string
	tokSHA        string
	tokCache      string
	workers       int
	downloads     int
	keepDownloads bool
	textKey       string
	shardSize     string
	filterSet     string
	onError       string
	maxErrorRate  float64
	overwrite     bool
	s3Endpoint    string
	s3PathStyle   bool
	progress      string
}

func (f *jobFlags) register(c *cli.Command) {
	fs := c.Flags
	fs.StringVar(&f.dir, "d", "", "data `DIR`: the dataset goes to DIR/NAME/, downloads to DIR/NAME/downloads/ (required)")
	fs.StringVar(&f.dest, "dest", "", "write the dataset to `LOCATION`/NAME instead (a directory or s3://bucket/prefix); downloads stay in DIR")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer `SPEC` (default: the corpus' own, gpt2 for most; shakespeare: char, nanoGPT's character vocabulary): a tokenizer.json, a directory, a .tiktoken file, or a name: "+strings.Join(spec.Names(), ", "))
	fs.StringVar(&f.tokURL, "tokenizer-url", "", "download a named tokenizer from this `URL` instead of the canonical one")
	fs.StringVar(&f.tokSHA, "tokenizer-sha256", "", "expected sha256 `HEX` of the downloaded tokenizer file")
	fs.StringVar(&f.tokCache, "tokenizer-cache-dir", "", "`DIR` caching named tokenizers (empty: $GPTKIT_CACHE/tokenizers, else the user cache directory)")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "tokenize on `N` cores")
	fs.IntVar(&f.downloads, "parallel-downloads", 4, "download `N` files at once")
	fs.BoolVar(&f.keepDownloads, "keep-downloads", false, "keep DIR/NAME/downloads/ after the dataset is complete")
	fs.StringVar(&f.textKey, "text-key", "text", "the JSONL member (or Parquet column) `FIELD` holding the text")
	fs.StringVar(&f.shardSize, "shard-size", "0", "start a new shard when a .bin reaches `SIZE` bytes (e.g. 4GiB; 0: one shard per split); a killed run resumes from its last finished shard")
	fs.StringVar(&f.filterSet, "filter-set", "", "keep only the Pile records whose meta.pile_set_name is `NAME` (e.g. \"Enron Emails\")")
	fs.StringVar(&f.onError, "on-error", "skip", "`POLICY` for bad records (malformed JSON, a text that is not a string, a truncated .zst): skip them (counted, reported in DIR/NAME/prep-report.json) or fail")
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0.01, "exit 1 (after writing the dataset) when more than this `FRACTION` of the records were bad")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace a finished dataset in the output directory")
	fs.StringVar(&f.s3Endpoint, "s3-endpoint", "", "S3 endpoint `URL` for S3-compatible servers (default $AWS_ENDPOINT_URL_S3, else AWS)")
	fs.BoolVar(&f.s3PathStyle, "s3-path-style", false, "address S3 buckets path-style (automatic for IP and localhost endpoints)")
	fs.StringVar(&f.progress, "progress", "auto", "`MODE`: auto (a live line on a terminal, log lines otherwise), on, off")
}

// check returns a usage error message, or "".
func (f *jobFlags) check() string {
	switch {
	case f.dir == "":
		return "-d DIR is required"
	case f.workers < 1:
		return "--workers must be at least 1"
	case f.downloads < 1:
		return "--parallel-downloads must be at least 1"
	case f.onError != "skip" && f.onError != "fail":
		return fmt.Sprintf("--on-error is %q, want skip or fail", f.onError)
	case f.maxErrorRate < 0 || f.maxErrorRate > 1:
		return "--max-error-rate must be between 0 and 1"
	case f.progress != "auto" && f.progress != "on" && f.progress != "off":
		return fmt.Sprintf("--progress is %q, want auto, on or off", f.progress)
	}
	if _, err := cli.ParseSize(f.shardSize); err != nil {
		return "--shard-size: " + err.Error()
	}
	return ""
}

// loadTokenizer resolves --tokenizer (or def), logging downloads.
func (f *jobFlags) loadTokenizer(ctx context.Context, def string, log *slog.Logger) (*tokenize.Tokenizer, string, error) {
	s := f.tokenizer
	if s == "" {
		s = def
	}
	tok, err := spec.Load(ctx, s, spec.Options{CacheDir: f.tokCache, URL: f.tokURL, SHA256: f.tokSHA, Logger: log})
	return tok, s, err
}
