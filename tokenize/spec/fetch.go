package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Download tuning. Attempts are bounded: maxAttempts tries with exponential backoff
// from firstBackoff up to maxBackoff, about 4 s of waiting in all.
const (
	maxAttempts  = 5
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 2 * time.Second
	stallTimeout = 60 * time.Second // a response that sends no byte for this long is abandoned
)

// errStalled cancels an attempt whose response stopped sending bytes.
var errStalled = fmt.Errorf("no data received for %v", stallTimeout)

// fetcher downloads files into the cache.
type fetcher struct {
	client   *http.Client
	log      *slog.Logger
	progress func(Progress)
}

func newFetcher(opt Options) *fetcher {
	f := &fetcher{client: opt.HTTPClient, log: opt.Logger, progress: opt.Progress}
	if f.client == nil {
		f.client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f
}

// cached returns the content of the cache file at path, first downloading it from url
// when it is missing or its sha256 is not want.
func (f *fetcher) cached(ctx context.Context, url, path, want string) ([]byte, error) {
	data, err := os.ReadFile(path)
	corrupt := ""
	switch {
	case err == nil:
		got := sha256Hex(data)
		if got == want {
			return data, nil
		}
		corrupt = got
		f.log.Warn("cached tokenizer file fails its sha256 check; downloading it again", "path", path, "sha256", got, "want", want)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("spec: read cached %s: %w (remove it, or pass --cache-dir to use another cache)", path, err)
	}
	data, err = f.download(ctx, url, path, want)
	if err != nil && corrupt != "" {
		return nil, fmt.Errorf("%w (the cached copy had sha256 %s, want %s, so it was being downloaded again)", err, corrupt, want)
	}
	return data, err
}

// download fetches url into path+".part" and, when its sha256 is want, renames it to
// path. It holds the directory's lock meanwhile, so processes sharing the cache
// download a file once.
func (f *fetcher) download(ctx context.Context, url, path, want string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spec: create cache directory: %w (pass --cache-dir or set GPTKIT_CACHE to a writable directory)", err)
	}
	unlock, err := lockDir(ctx, dir, f.log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another process may have published the file while this one waited for the lock.
	if data, err := os.ReadFile(path); err == nil && sha256Hex(data) == want {
		return data, nil
	}

	part := path + ".part"
	hint := fmt.Sprintf("retry later, pass --tokenizer-url to use a mirror, or download the file by hand to %s", path)
	f.log.Info("downloading tokenizer file", "url", url, "path", path)
	for restarted := false; ; restarted = true {
		resumed, err := f.fetchWithRetries(ctx, url, path, part)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("spec: download %s: %w", url, err)
			}
			return nil, fmt.Errorf("spec: download %s: %w; %s", url, err, hint)
		}
		data, err := os.ReadFile(part)
		if err != nil {
			return nil, fmt.Errorf("spec: read back %s: %w", part, err)
		}
		got := sha256Hex(data)
		if got == want {
			if err := publish(part, path); err != nil {
				return nil, err
			}
			f.log.Info("saved tokenizer file", "path", path, "bytes", len(data))
			return data, nil
		}
		if err := os.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("spec: remove %s after a sha256 mismatch: %w", part, err)
		}
		if resumed && !restarted {
			// The bytes kept from an earlier attempt may belong to another version
			// of the file: start over once from byte 0.
			f.log.Warn("resumed download fails its sha256 check; downloading from the start", "url", url, "sha256", got)
			continue
		}
		return nil, fmt.Errorf("spec: download %s: sha256 is %s, want %s; the file was discarded (check the URL, pass --tokenizer-sha256 %s if this version is the one you want, or download the right file by hand to %s)", url, got, want, got, path)
	}
}

// fetchWithRetries runs attempts until one completes part, an error is permanent,
// ctx is done, or maxAttempts are spent. resumed reports whether part kept bytes
// written before this call.
func (f *fetcher) fetchWithRetries(ctx context.Context, url, path, part string) (resumed bool, err error) {
	delay := firstBackoff
	for attempt := 1; ; attempt++ {
		r, err := f.attempt(ctx, url, path, part)
		resumed = resumed || r
		if err == nil {
			return resumed, nil
		}
		if ctx.Err() != nil {
			return resumed, context.Cause(ctx)
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return resumed, perm.err
		}
		if attempt == maxAttempts {
			return resumed, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		f.log.Warn("download failed; retrying", "url", url, "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
			return resumed, context.Cause(ctx)
		case <-time.After(delay):
		}
		delay = min(2*delay, maxBackoff)
	}
}

// permanentError marks a download error that retrying will not fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// attempt makes one request for url and appends the body to part, asking with a Range
// request for just the bytes part lacks. It reports whether it resumed from bytes
// already in part.
func (f *fetcher) attempt(ctx context.Context, url, path, part string) (resumed bool, err error) {
	var offset int64
	if info, err := os.Stat(part); err == nil {
		offset = info.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, permanentError{fmt.Errorf("stat %w", err)}
	}

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		return false, permanentError{err}
	}
	// Identity encoding keeps Range offsets and the bytes on disk the same thing.
	req.Header.Set("Accept-Encoding", "identity")
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()

	// Only a response with a body worth keeping creates part.
	total := int64(-1)
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			// Not the bytes asked for: drop what part holds and start over.
			return false, restart(part, fmt.Errorf("server answered a request for bytes from %d with Content-Range %q", offset, resp.Header.Get("Content-Range")))
		}
		resumed, total = offset > 0, size
		if offset > 0 {
			f.log.Info("resuming download", "url", url, "from_byte", offset)
		}
	case code == http.StatusOK:
		offset, total = 0, resp.ContentLength
	case code == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size == offset {
			return true, syncFile(part) // part already holds the whole file
		}
		return false, restart(part, fmt.Errorf("server refused to resume from byte %d (%s)", offset, resp.Status))
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return false, fmt.Errorf("server answered %s", resp.Status)
	default:
		return false, permanentError{fmt.Errorf("server answered %s", resp.Status)}
	}

	file, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return false, permanentError{fmt.Errorf("open %w", err)}
	}
	defer file.Close()
	if err := file.Truncate(offset); err != nil {
		return false, permanentError{fmt.Errorf("truncate %w", err)}
	}
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return false, permanentError{fmt.Errorf("seek %w", err)}
	}

	// Abandon the response when it stops sending bytes.
	stall := time.AfterFunc(stallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	done := offset
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			stall.Reset(stallTimeout)
			if _, err := file.Write(buf[:n]); err != nil {
				return resumed, permanentError{fmt.Errorf("write %w", err)}
			}
			done += int64(n)
			if f.progress != nil {
				f.progress(Progress{URL: url, Path: path, Done: done, Total: total})
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
				rerr = cause
			}
			return resumed, fmt.Errorf("connection lost after %d bytes: %w", done, rerr)
		}
	}
	if total >= 0 && done != total {
		return resumed, fmt.Errorf("got %d bytes, want %d", done, total)
	}
	if err := file.Sync(); err != nil {
		return resumed, permanentError{fmt.Errorf("sync %w", err)}
	}
	if err := file.Close(); err != nil {
		return resumed, permanentError{fmt.Errorf("close %w", err)}
	}
	return resumed, nil
}

// restart removes part so that the next attempt downloads from byte 0, and returns
// cause (a transient error) or the removal's own error.
func restart(part string, cause error) error {
	if err := os.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return permanentError{fmt.Errorf("remove %w", err)}
	}
	return cause
}

// parseContentRange parses "bytes START-END/SIZE" or "bytes */SIZE"; START is -1 in
// the second form and SIZE is -1 when given as "*".
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	span, sizeText, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sizeText != "*" {
		n, err := strconv.ParseInt(sizeText, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		size = n
	}
	if span == "*" {
		return -1, size, true
	}
	startText, _, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(startText, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, size, true
}

// publish renames the synced file part to path and syncs the directory, so that path
// appears complete or not at all.
func publish(part, path string) error {
	if err := os.Rename(part, path); err != nil {
		return fmt.Errorf("spec: publish %s: %w", path, err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync() // best effort: some systems cannot sync a directory
		dir.Close()
	}
	return nil
}

// syncFile flushes the file at path to stable storage.
func syncFile(path string) error {
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return permanentError{fmt.Errorf("open %w", err)}
	}
	defer file.Close()
	if err := file.Sync(); err != nil {
		return permanentError{fmt.Errorf("sync %w", err)}
	}
	return nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
