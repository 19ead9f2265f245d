package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"gptkit/internal/fetch"
)

// Download tuning. Attempts are bounded: maxAttempts tries with exponential backoff
// (jittered) from firstBackoff up to maxBackoff, at most about 4 s of waiting in all.
const (
	maxAttempts  = 5
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 2 * time.Second
	stallTimeout = 60 * time.Second // a response that sends no byte for this long is abandoned
)

// fetcher downloads files into the cache, through internal/fetch.
type fetcher struct {
	client   *http.Client // nil: fetch.DefaultClient
	log      *slog.Logger
	progress func(Progress)
	// mirror is the next step a failed download's error names besides retrying and
	// downloading by hand: what the SPEC at hand can do instead (--tokenizer-url is
	// refused for a Hugging Face id or a URL, and was already given with one).
	mirror string
}

// newFetcher returns a fetcher with opt's client, logger and progress callback.
func newFetcher(opt Options) *fetcher {
	f := &fetcher{client: opt.HTTPClient, log: opt.Logger, progress: opt.Progress, mirror: "pass --tokenizer-url to use a mirror"}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f
}

// cached returns the content of the cache file at path, first downloading it from url
// when it is missing or its sha256 is not want ("" checks nothing).
func (f *fetcher) cached(ctx context.Context, url, path, want string) ([]byte, error) {
	data, err := os.ReadFile(path)
	corrupt := ""
	switch {
	case err == nil:
		got := sha256Hex(data)
		if got == want || want == "" { // no sha256 to check: the first download stands
			return data, nil
		}
		corrupt = got
		f.log.Warn("cached tokenizer file fails its sha256 check; downloading it again", "path", path, "sha256", got, "want", want)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("spec: read cached %s: %w (remove it, or pass --tokenizer-cache-dir to use another cache)", path, err)
	}
	data, err = f.download(ctx, url, path, want)
	if err != nil && corrupt != "" {
		return nil, fmt.Errorf("%w (the cached copy had sha256 %s, want %s, so it was being downloaded again)", err, corrupt, want)
	}
	return data, err
}

// download fetches url into path (through path+".part", published only when its
// sha256 is want) and returns the content. fetch.FetchOne holds a lock on path while it
// works, so processes sharing the cache download a file once, and it replaces a cached
// copy that fails its check.
func (f *fetcher) download(ctx context.Context, url, path, want string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("spec: create cache directory: %w (pass --tokenizer-cache-dir or set GPTKIT_CACHE to a writable directory)", err)
	}
	file := fetch.File{URLs: []string{url}, Dest: path, SHA256: want}
	if err := fetch.FetchOne(ctx, file, f.options(url, path)); err != nil {
		return nil, explain(ctx, url, path, want, f.mirror, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec: read back %s: %w", path, err)
	}
	return data, nil
}

// options are the fetch.Options for downloading url to path: the retry budget above,
// no sidecar (Load reads and hashes the file anyway), and no empty or HTML file.
func (f *fetcher) options(url, path string) fetch.Options {
	opt := fetch.Options{
		Client:       f.client,
		Retries:      maxAttempts - 1,
		Backoff:      firstBackoff,
		MaxBackoff:   maxBackoff,
		StallTimeout: stallTimeout,
		Logger:       f.log,
		Validate:     fetch.RejectEmptyOrHTML,
		NoSidecar:    true,
	}
	if f.progress != nil {
		opt.Progress = func(_ string, done, total int64) {
			f.progress(Progress{URL: url, Path: path, Done: done, Total: total})
		}
	}
	return opt
}

// explain turns a fetch error into spec's message, which names the flags to try.
func explain(ctx context.Context, url, path, want, mirror string, err error) error {
	var mismatch *fetch.MismatchError
	if errors.As(err, &mismatch) && mismatch.What == "sha256" {
		return fmt.Errorf("spec: download %s: sha256 is %s, want %s; the file was discarded (check the URL, pass --tokenizer-sha256 %s if this version is the one you want, or download the right file by hand to %s)", url, mismatch.Got, want, mismatch.Got, path)
	}
	cause := err
	var ferr *fetch.Error
	if errors.As(err, &ferr) {
		if n := len(ferr.Sources); n > 0 {
			cause = ferr.Sources[n-1].Err
		} else if ferr.Err != nil {
			cause = ferr.Err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("spec: download %s: %w", url, cause)
	}
	return fmt.Errorf("spec: download %s: %w; retry later, %s, or download the file by hand to %s", url, cause, mirror, path)
}

// parseContentRange parses a Content-Range header; see fetch.ParseContentRange.
func parseContentRange(s string) (start, size int64, ok bool) {
	return fetch.ParseContentRange(s)
}

// sha256Hex returns the hex sha256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
