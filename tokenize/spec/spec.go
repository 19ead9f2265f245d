package spec

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"gptkit/tokenize"
)

// Options says where named tokenizers are cached and how they are fetched. The zero
// value is ready to use; Options only matter for named SPECs.
type Options struct {
	// CacheDir is the cache root: a named tokenizer's files live in CacheDir/<name>/
	// (gpt2 and r50k_base share CacheDir/gpt2/). Empty means DefaultCacheDir().
	CacheDir string

	// URL replaces the canonical download URL. For a one-file tokenizer (neox-20b,
	// cl100k_base, o200k_base) it is the URL of that file. For gpt2 and r50k_base it is
	// a base URL: "/vocab.json" and "/merges.txt" are appended to it after trailing
	// slashes are trimmed (https://mirror/gpt2 gives https://mirror/gpt2/vocab.json).
	// Unless SHA256 is given too, the files must have the canonical sha256. Only http
	// and https URLs are accepted. URL is an error with a path SPEC or "char".
	URL string

	// SHA256 replaces the expected hex sha256 of the downloaded (and cached) file. For
	// gpt2 and r50k_base it holds two digests separated by a comma, vocab.json's first.
	// Empty means the canonical digests.
	SHA256 string

	// HTTPClient does the downloads. Nil means a client with connect, TLS and
	// response-header timeouts. Whatever the client, a download that receives no byte
	// for a minute is abandoned and retried.
	HTTPClient *http.Client

	// Logger gets download, retry and cache-repair messages. Nil means no logging.
	Logger *slog.Logger

	// Progress, if set, is called on the downloading goroutine as bytes arrive.
	Progress func(Progress)
}

// Progress reports how far a download has got.
type Progress struct {
	URL   string // where the bytes come from
	Path  string // the cache file they will be published as
	Done  int64  // bytes received so far, including those resumed from an earlier attempt
	Total int64  // size of the whole file, or -1 when the server did not say
}

// DefaultCacheDir returns the cache root used when Options.CacheDir is empty:
// $GPTKIT_CACHE/tokenizers when GPTKIT_CACHE is set, else
// <os.UserCacheDir()>/gptkit/tokenizers (~/.cache/gptkit/tokenizers on Linux).
func DefaultCacheDir() (string, error) {
	if dir := os.Getenv("GPTKIT_CACHE"); dir != "" {
		return filepath.Join(dir, "tokenizers"), nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("spec: no cache directory (set GPTKIT_CACHE or pass --tokenizer-cache-dir): %w", err)
	}
	return filepath.Join(dir, "gptkit", "tokenizers"), nil
}

// Load resolves spec (a path or a name, see the package documentation) to a
// tokenizer. A name is built from the files embedded in the binary, unless opt asks for
// a download (URL or SHA256): then its files are downloaded into the cache when they
// are missing or corrupt.
func Load(ctx context.Context, spec string, opt Options) (*tokenize.Tokenizer, error) {
	if spec == "" {
		return nil, fmt.Errorf("spec: empty tokenizer SPEC: give a path or one of %s", strings.Join(Names(), ", "))
	}
	info, err := os.Stat(spec)
	switch {
	case err == nil:
		if opt.URL != "" || opt.SHA256 != "" {
			return nil, fmt.Errorf("spec: %s is a local path; a download URL or sha256 applies only to a tokenizer name (%s)", spec, strings.Join(Names(), ", "))
		}
		return builtinOr(spec)(loadPath(spec, info))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("spec: %w", err)
	}
	if named, ok := lookupName(spec); ok {
		return loadNamed(ctx, named, opt)
	}
	if src, rel, ok := remoteSource(spec); ok {
		if err := missingLocalPath(spec); err != nil {
			return nil, err
		}
		return builtinOr(rel)(orLocalPath(spec)(loadRemote(ctx, spec, src, rel, opt)))
	}
	return nil, fmt.Errorf("spec: tokenizer %q is neither an existing file or directory, a built-in name (%s), a Hugging Face id (ORG/NAME) nor an http(s) URL", spec, strings.Join(Names(), ", "))
}

// LoadName is Load of a built-in name (Names) alone: never a file or directory of that
// name in the working directory.
func LoadName(ctx context.Context, name string, opt Options) (*tokenize.Tokenizer, error) {
	named, ok := lookupName(name)
	if !ok {
		return nil, fmt.Errorf("spec: %q is not a known tokenizer name (%s)", name, strings.Join(Names(), ", "))
	}
	return loadNamed(ctx, named, opt)
}

// loadNamed builds named from the files embedded in the binary or, when opt gives a URL
// or a sha256, from files fetched into the cache (when they are not there yet).
func loadNamed(ctx context.Context, named namedTokenizer, opt Options) (*tokenize.Tokenizer, error) {
	if named.build == nil {
		if opt.URL != "" || opt.SHA256 != "" {
			return nil, fmt.Errorf("spec: tokenizer %q needs no file, so a download URL or sha256 makes no sense for it", named.name)
		}
		return tokenize.NewNeoXChar(), nil
	}
	if opt.URL == "" && opt.SHA256 == "" {
		return loadEmbedded(named)
	}
	urls, sums, err := sources(named, opt)
	if err != nil {
		return nil, err
	}
	root := opt.CacheDir
	if root == "" {
		if root, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	f := newFetcher(opt)
	if opt.URL != "" {
		f.mirror = "check --tokenizer-url, or leave out --tokenizer-url and --tokenizer-sha256 to use the built-in copy (no network)"
	} else {
		f.mirror = "pass --tokenizer-url to use a mirror, or leave out --tokenizer-sha256 to use the built-in copy (no network)"
	}
	contents := make([][]byte, len(named.files))
	for i, file := range named.files {
		path := filepath.Join(root, named.cacheDir, file.name)
		if contents[i], err = f.cached(ctx, urls[i], path, sums[i]); err != nil {
			return nil, err
		}
	}
	tok, err := named.build(contents, named.name)
	if err != nil {
		return nil, fmt.Errorf("spec: load %s from %s: %w", named.name, filepath.Join(root, named.cacheDir), err)
	}
	return tok, nil
}

// sources returns the URL and the expected sha256 of each of named's files, after
// Options.URL and Options.SHA256 are applied.
func sources(named namedTokenizer, opt Options) (urls, sums []string, err error) {
	for _, file := range named.files {
		urls = append(urls, file.url)
		sums = append(sums, file.sha256)
	}
	if opt.URL != "" {
		if !strings.HasPrefix(opt.URL, "http://") && !strings.HasPrefix(opt.URL, "https://") {
			return nil, nil, fmt.Errorf("spec: download URL %q for %s must start with http:// or https://", opt.URL, named.name)
		}
		if len(named.files) == 1 {
			urls[0] = opt.URL
		} else {
			base := strings.TrimRight(opt.URL, "/")
			for i, file := range named.files {
				urls[i] = base + "/" + file.name
			}
		}
	}
	if opt.SHA256 != "" {
		given := strings.Split(opt.SHA256, ",")
		if len(given) != len(named.files) {
			return nil, nil, fmt.Errorf("spec: %s has %d files (%s), so the sha256 override needs %d comma-separated hex digests, got %d", named.name, len(named.files), fileNames(named), len(named.files), len(given))
		}
		for i, sum := range given {
			sum = strings.ToLower(strings.TrimSpace(sum))
			if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
				return nil, nil, fmt.Errorf("spec: sha256 override %q for %s is not 64 hex digits", sum, named.files[i].name)
			}
			sums[i] = sum
		}
	}
	return urls, sums, nil
}

func fileNames(named namedTokenizer) string {
	var names []string
	for _, file := range named.files {
		names = append(names, file.name)
	}
	return strings.Join(names, ", ")
}
