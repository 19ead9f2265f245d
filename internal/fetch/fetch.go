package fetch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"
)

// File is one file to download.
type File struct {
	// URLs are tried in order (mirrors first, then the original) until one yields a
	// file that passes the checks.
	URLs []string
	// Dest is the local path of the finished file. Dest.part (the download in
	// progress), Dest.lock and Dest.sha256 (the verification sidecar) sit beside it.
	Dest string
	// Size is the file's size in bytes; 0 means unknown.
	Size int64
	// SHA256 is the file's hex sha256 (either case); "" means unknown.
	SHA256 string
}

// Options tune Fetch. The zero value is ready to use.
type Options struct {
	// Client does the requests. Nil means a client whose transport takes its proxy from
	// the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) and has connect, TLS and
	// response-header timeouts, but no overall timeout (a download may take hours).
	Client *http.Client
	// Parallel is how many files Fetch downloads at once; 0 means 4.
	Parallel int
	// Retries is how many times in a row a failed attempt on one URL is retried
	// before Fetch moves on to the next URL; 0 means 5, a negative value means none.
	// An attempt that got further into the file than any before it starts the count
	// over.
	Retries int
	// Backoff is the delay before the first retry (0 means 1 s); each further retry
	// doubles it, up to MaxBackoff (0 means 30 s). Every delay is jittered to between
	// half and all of its value, so that parallel downloads do not retry in lockstep.
	Backoff, MaxBackoff time.Duration
	// StallTimeout abandons (and retries) a response that sends no byte for this
	// long; 0 means 60 s.
	StallTimeout time.Duration
	// Logger gets downloads, retries, resumes and repairs. Nil means no logging.
	Logger *slog.Logger
	// Progress, if set, is called as bytes arrive, from the goroutine downloading
	// dest, so it must be safe for concurrent use: done is the bytes of dest received
	// so far (resumed ones included), total the file's size or -1 when unknown. For
	// a file already in place it is called once with done == total.
	Progress func(dest string, done, total int64)
	// Validate, if set, checks the first HeadSize bytes of a downloaded file (fewer if
	// the file is shorter) before the size and sha256 checks, and those of an
	// existing Dest whose sha256 is unknown. An error fails the download from that
	// URL. RejectEmptyOrHTML is one.
	Validate func(dest string, head []byte) error
	// Hint returns the next step to suggest when f could not be downloaded for
	// reason err; it ends the error message. Nil means DefaultHint.
	Hint func(f File, err error) string
	// NoSidecar stops Fetch from reading and writing Dest.sha256, so an existing Dest
	// with a known sha256 is hashed on every call. For small files.
	NoSidecar bool
}

// HeadSize is how many leading bytes of a file Options.Validate gets.
const HeadSize = 4096

// DefaultHint is the next step suggested when Options.Hint is nil.
func DefaultHint(f File, err error) string {
	return fmt.Sprintf("retry later (a rerun resumes where this one stopped), try another source, or download the file by hand to %s", f.Dest)
}

// config is Options with the defaults filled in.
type config struct {
	Options
}

// newConfig fills in opt's defaults.
func newConfig(opt Options) *config {
	c := &config{opt}
	if c.Client == nil {
		c.Client = DefaultClient()
	}
	if c.Parallel <= 0 {
		c.Parallel = 4
	}
	switch {
	case c.Retries == 0:
		c.Retries = 5
	case c.Retries < 0:
		c.Retries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	c.MaxBackoff = max(c.MaxBackoff, c.Backoff)
	if c.StallTimeout <= 0 {
		c.StallTimeout = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Hint == nil {
		c.Hint = DefaultHint
	}
	return c
}

// DefaultClient returns the client Fetch uses when Options.Client is nil: proxies
// from the environment, 30 s to connect, 15 s for the TLS handshake, 60 s for the
// response headers, and no overall timeout.
func DefaultClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
		ForceAttemptHTTP2:     true,
	}}
}

// Fetch downloads files, Options.Parallel at a time, into place (see the package
// documentation). It returns when all are in place or one has failed; the first
// failure cancels the downloads still running and is the error returned, an *Error
// naming the file, the URLs tried and the next step.
func Fetch(ctx context.Context, files []File, opt Options) error {
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		key := filepath.Clean(f.Dest)
		if seen[key] {
			return fmt.Errorf("fetch: %s is listed twice", f.Dest)
		}
		seen[key] = true
	}
	c := newConfig(opt)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, c.Parallel)
start:
	for _, f := range files {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break start
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.fetchFile(ctx, f); err != nil {
				once.Do(func() { first = err })
				cancel(err)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fetch: %w", context.Cause(ctx))
	}
	return nil
}

// FetchOne downloads one file into place, as Fetch does.
func FetchOne(ctx context.Context, f File, opt Options) error {
	return newConfig(opt).fetchFile(ctx, f)
}
