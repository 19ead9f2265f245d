package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"gptkit/internal/durable"
	"gptkit/internal/redact"
)

// partState follows Dest.part across the attempts of one download.
type partState struct {
	h      hash.Hash // sha256 of part[:n]
	n      int64
	length int64 // the size of part as last seen or written
	// ifRange is the strong ETag (or Last-Modified) of the response that began part,
	// sent as If-Range when resuming so that a changed file is sent whole.
	ifRange string
	// src is part's record (partsource.go): where its bytes came from; nil if unknown.
	src *partSource
	// dropped counts the times part's bytes were dropped for a download from byte 0
	// (retry's measure of progress starts over then).
	dropped int
}

// reset forgets part's bytes: the download starts over from byte 0.
func (s *partState) reset() {
	s.h, s.n, s.length, s.ifRange = sha256.New(), 0, 0, ""
}

// catchUp makes s.h cover the first length bytes of part, hashing them from disk
// unless this process wrote them.
func (s *partState) catchUp(part string, length int64) error {
	if s.h != nil && s.n == length {
		return nil
	}
	ifRange := s.ifRange
	s.reset()
	s.ifRange, s.length = ifRange, length
	if length == 0 {
		return nil
	}
	file, err := os.Open(part)
	if err != nil {
		return err
	}
	defer file.Close()
	n, err := io.Copy(s.h, io.LimitReader(file, length))
	s.n = n
	if err == nil && n != length {
		err = fmt.Errorf("%s shrank to %d bytes while being read", part, n)
	}
	return err
}

// download fetches url into f.Dest.part and, when the result passes the checks,
// publishes it as f.Dest. Bytes resumed from an earlier attempt that fail the checks
// are dropped and the file is downloaded once more from byte 0.
func (c *config) download(ctx context.Context, url string, f File) error {
	part := f.Dest + ".part"
	st := &partState{src: readPartSource(part)}
	if st.src != nil && st.src.URL == url {
		st.ifRange = st.src.Validator // the rerun asks for this version's bytes only
	}
	c.Logger.Info("downloading", "url", redact.URL(url), "dest", f.Dest)
	for restarted := false; ; restarted = true {
		resumed, err := c.retry(ctx, url, f, part, st)
		if err != nil {
			return err
		}
		err = c.checkPart(f, part, st)
		if err == nil {
			return c.publish(f, part, st)
		}
		if rmErr := removeIfExists(part); rmErr != nil {
			return permanentError{rmErr}
		}
		removePartSource(part)
		st.reset()
		st.src = nil
		if !resumed || restarted {
			return err
		}
		// The bytes kept from an earlier attempt may belong to another version of the
		// file: start over once from byte 0.
		c.Logger.Warn("resumed download fails its check; downloading from the start", "url", redact.URL(url), "dest", f.Dest, "err", redact.String(err.Error()))
	}
}

// retry runs attempts until one completes part, an error is permanent, ctx is done,
// or Options.Retries retries in a row made no progress. resumed reports whether part
// kept bytes written before this call.
func (c *config) retry(ctx context.Context, url string, f File, part string, st *partState) (resumed bool, err error) {
	best := int64(0)
	if info, err := os.Stat(part); err == nil {
		best = info.Size()
	}
	delay := c.Backoff
	forgotKept := false
	for failures := 1; ; failures++ {
		dropped := st.dropped
		r, err := c.attempt(ctx, url, f, part, st)
		resumed = resumed || r
		if st.dropped != dropped && !forgotKept {
			// The bytes kept when this began are gone (the server sent the whole file,
			// or another version): progress counts from byte 0 now, not from their
			// length, which a flaky line might take many attempts to pass again. Once:
			// a server that drops the bytes every time must still get further each time.
			forgotKept, best = true, 0
		}
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
		if st.length > best {
			// This attempt got further than any before it: the line is flaky, not
			// dead, so the retry budget starts over.
			best, failures, delay = st.length, 1, c.Backoff
		}
		if failures > c.Retries {
			return resumed, fmt.Errorf("gave up after %d attempts: %w", failures, err)
		}
		wait := delay/2 + rand.N(delay/2+1)
		var status *StatusError
		if errors.As(err, &status) && status.retryAfter > wait {
			wait = min(status.retryAfter, c.MaxBackoff)
		}
		c.Logger.Warn("download failed; retrying", "url", redact.URL(url), "dest", f.Dest, "attempt", failures, "retry_in", wait.Round(time.Millisecond), "err", redact.String(err.Error()))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return resumed, context.Cause(ctx)
		case <-timer.C:
		}
		delay = min(2*delay, c.MaxBackoff)
	}
}

// checkPart checks a complete part: Options.Validate, then the size, then the sha256.
func (c *config) checkPart(f File, part string, st *partState) error {
	info, err := os.Stat(part)
	if err != nil {
		return permanentError{err}
	}
	if err := st.catchUp(part, info.Size()); err != nil {
		return permanentError{err}
	}
	if c.Validate != nil {
		head, err := readHead(part)
		if err != nil {
			return permanentError{err}
		}
		if err := c.Validate(f.Dest, head); err != nil {
			return invalidError{err}
		}
	}
	if f.Size > 0 && info.Size() != f.Size {
		return &MismatchError{What: "size", Got: fmt.Sprint(info.Size()), Want: fmt.Sprint(f.Size)}
	}
	if got := hex.EncodeToString(st.h.Sum(nil)); f.SHA256 != "" && got != f.SHA256 {
		return &MismatchError{What: "sha256", Got: got, Want: f.SHA256}
	}
	return nil
}

// publish renames the checked, synced part to f.Dest, syncs the directory so that
// f.Dest appears complete or not at all, and records the sidecar.
func (c *config) publish(f File, part string, st *partState) error {
	if err := os.Rename(part, f.Dest); err != nil {
		return permanentError{fmt.Errorf("publish %w", err)}
	}
	removePartSource(part)
	durable.SyncDir(filepath.Dir(f.Dest)) // best effort: the file is whole either way
	sum := hex.EncodeToString(st.h.Sum(nil))
	if !c.NoSidecar {
		if err := writeSidecar(f.Dest, sum); err != nil {
			c.Logger.Warn("could not record the sha256 beside the file; the next run will hash it again", "dest", f.Dest, "err", err)
		}
	}
	c.Logger.Info("saved", "dest", f.Dest, "bytes", st.n, "sha256", sum)
	return nil
}
