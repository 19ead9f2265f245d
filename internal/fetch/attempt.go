package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"gptkit/internal/redact"
)

// errStalled cancels an attempt whose response stopped sending bytes.
var errStalled = errors.New("no data received for too long")

// attempt makes one request for url and appends the body to part, asking with a Range
// request for just the bytes part lacks. It reports whether it resumed from bytes
// already in part. An error wrapped in permanentError is not worth retrying.
func (c *config) attempt(ctx context.Context, url string, f File, part string, st *partState) (resumed bool, err error) {
	var offset int64
	if info, err := os.Stat(part); err == nil {
		offset = info.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, permanentError{fmt.Errorf("stat %w", err)}
	}
	st.length = offset
	// Bytes of another source, with no sha256 to catch two versions spliced: ask this
	// one for the whole file, and replace them once it answers with it (the .part
	// stays for a rerun if this source fails before that; after, it holds this
	// source's bytes so far).
	whole := offset > 0 && f.SHA256 == "" && st.src != nil && st.src.URL != url
	if f.Size > 0 && offset > f.Size {
		// Longer than the file can be: not worth keeping.
		if err := restart(part, st); err != nil {
			return false, err
		}
		offset = 0
	}
	if f.Size > 0 && offset == f.Size {
		// Complete already (checkPart decides), but maybe written by a process that
		// died before its bytes reached the disk: flush them before publishing.
		return true, syncFile(part)
	}
	// Hash the kept bytes before asking, so that the response never waits on the disk.
	if err := st.catchUp(part, offset); err != nil {
		return false, permanentError{err}
	}

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		return false, permanentError{err}
	}
	// Identity encoding keeps Range offsets and the bytes on disk the same thing.
	req.Header.Set("Accept-Encoding", "identity")
	if offset > 0 && !whole {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		if st.ifRange != "" {
			req.Header.Set("If-Range", st.ifRange)
		}
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		// A host that does not exist will not appear on retry: try the next URL.
		if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return false, permanentError{err}
		}
		return false, err
	}
	defer resp.Body.Close()

	total := int64(-1)
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
		start, size, ok := ParseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			// Not the bytes asked for: drop what part holds and start over.
			if err := restart(part, st); err != nil {
				return false, err
			}
			return false, fmt.Errorf("server answered a request for bytes from %d with Content-Range %q", offset, resp.Header.Get("Content-Range"))
		}
		if offset > 0 && size >= 0 && st.src != nil && st.src.URL == url && st.src.Size >= 0 && size != st.src.Size {
			// The file's size changed since part began: another version.
			was := st.src.Size
			if err := restart(part, st); err != nil {
				return false, err
			}
			return false, fmt.Errorf("the file's size changed from %d to %d bytes since the download began (another version); downloading it from the start", was, size)
		}
		resumed, total = offset > 0, size
		if offset == 0 {
			st.src = &partSource{URL: url, Validator: validator(resp.Header), Size: size}
			writePartSource(part, *st.src)
		}
		if st.ifRange == "" {
			// Resuming a .part of an earlier run: the bytes kept may be of another
			// version (checkPart catches that), but from here on a retry must not
			// splice in a third.
			st.ifRange = validator(resp.Header)
		}
		if resumed {
			c.Logger.Info("resuming download", "url", redact.URL(url), "dest", f.Dest, "from_byte", offset)
		}
	case code == http.StatusOK:
		var body io.Reader = resp.Body
		total = resp.ContentLength
		if offset > 0 && f.Size > 0 && total >= 0 && total != f.Size {
			// Not the file (an error page sent with 200): the bytes kept stay.
			return false, permanentError{&MismatchError{What: "size", Got: fmt.Sprint(total), Want: fmt.Sprint(f.Size), Announced: true}}
		}
		if offset > 0 && c.Validate != nil {
			// Check the head of what came before dropping the bytes kept: a proxy's
			// or captive portal's page answered with 200 must not cost them. The
			// read is under the stall timer, as the body's is.
			head := make([]byte, HeadSize)
			stall := time.AfterFunc(c.StallTimeout, func() { cancel(fmt.Errorf("%w (%v)", errStalled, c.StallTimeout)) })
			n, rerr := io.ReadFull(resp.Body, head)
			stall.Stop()
			if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
				if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
					rerr = cause
				}
				return false, fmt.Errorf("connection lost after 0 bytes: %w", rerr)
			}
			if verr := c.Validate(f.Dest, head[:n]); verr != nil {
				return false, permanentError{fmt.Errorf("the server answered the request to resume with something else than the file (%v); the %d bytes downloaded before are kept", verr, offset)}
			}
			body = io.MultiReader(bytes.NewReader(head[:n]), resp.Body)
		}
		if offset > 0 {
			c.Logger.Info("server sent the whole file instead of resuming; starting over", "url", redact.URL(url), "dest", f.Dest)
			st.dropped++
		}
		offset = 0
		st.reset()
		st.ifRange = validator(resp.Header)
		// The kept bytes go before the record names this response (a crash between
		// the two must not leave another version's bytes under its name).
		if err := os.Truncate(part, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, permanentError{localError{err}}
		}
		st.src = &partSource{URL: url, Validator: st.ifRange, Size: total}
		writePartSource(part, *st.src)
		if f.Size > 0 && total >= 0 && total != f.Size {
			return false, permanentError{&MismatchError{What: "size", Got: fmt.Sprint(total), Want: fmt.Sprint(f.Size), Announced: true}}
		}
		return false, c.copyBody(ctx, actx, cancel, body, f, url, part, offset, total, st)
	case code == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		if _, size, ok := ParseContentRange(resp.Header.Get("Content-Range")); ok && size == offset {
			return true, syncFile(part) // part already holds the whole file
		}
		if err := restart(part, st); err != nil {
			return false, err
		}
		return false, fmt.Errorf("server refused to resume from byte %d (%s)", offset, resp.Status)
	default:
		serr := &StatusError{Code: code, Status: resp.Status, retryAfter: retryAfter(resp.Header)}
		if serr.transient() {
			return false, serr
		}
		return false, permanentError{serr}
	}
	if f.Size > 0 && total >= 0 && total != f.Size {
		return false, permanentError{&MismatchError{What: "size", Got: fmt.Sprint(total), Want: fmt.Sprint(f.Size), Announced: true}}
	}
	return resumed, c.copyBody(ctx, actx, cancel, resp.Body, f, url, part, offset, total, st)
}

// copyBody appends body to part (truncated to offset), feeding st's hash, until EOF.
// total is the file's size as the server announced it, or -1. It abandons a body
// that sends nothing for Options.StallTimeout by cancelling actx.
func (c *config) copyBody(ctx, actx context.Context, cancel context.CancelCauseFunc, body io.Reader, f File, url, part string, offset, total int64, st *partState) error {
	file, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return permanentError{fmt.Errorf("open %w", err)}
	}
	defer file.Close()
	if err := file.Truncate(offset); err != nil {
		return permanentError{fmt.Errorf("truncate %w", err)}
	}
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return permanentError{fmt.Errorf("seek %w", err)}
	}
	st.length = offset

	stall := time.AfterFunc(c.StallTimeout, func() { cancel(fmt.Errorf("%w (%v)", errStalled, c.StallTimeout)) })
	defer stall.Stop()
	done, progressTotal := offset, total
	if total < 0 && f.Size > 0 {
		progressTotal = f.Size
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			stall.Reset(c.StallTimeout)
			if _, err := file.Write(buf[:n]); err != nil {
				// This machine's failure (a full disk): no other source would do
				// better, and the bytes written so far stay for a rerun.
				return permanentError{localError{err}}
			}
			st.h.Write(buf[:n])
			done += int64(n)
			st.n, st.length = done, done
			if c.Progress != nil {
				c.Progress(f.Dest, done, progressTotal)
			}
			if f.Size > 0 && done > f.Size {
				if err := restart(part, st); err != nil {
					return err
				}
				return permanentError{&MismatchError{What: "size", Got: "more than " + fmt.Sprint(f.Size), Want: fmt.Sprint(f.Size)}}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
				rerr = cause
			}
			return fmt.Errorf("connection lost after %d bytes: %w", done, rerr)
		}
	}
	if total >= 0 && done != total {
		return fmt.Errorf("got %d bytes, want %d", done, total)
	}
	if err := file.Sync(); err != nil {
		return permanentError{fmt.Errorf("sync %w", err)}
	}
	if err := file.Close(); err != nil {
		return permanentError{fmt.Errorf("close %w", err)}
	}
	return nil
}

// restart removes part so that the next attempt downloads from byte 0.
func restart(part string, st *partState) error {
	st.dropped++
	st.reset()
	st.src = nil
	removePartSource(part)
	if err := removeIfExists(part); err != nil {
		return permanentError{err}
	}
	return nil
}

// validator returns the value to send as If-Range when resuming a response with
// these headers: its strong ETag, else its Last-Modified, else "".
func validator(h http.Header) string {
	if etag := h.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		return etag
	}
	return h.Get("Last-Modified")
}

// retryAfter parses a Retry-After header given in seconds; 0 when absent or a date.
func retryAfter(h http.Header) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || secs < 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
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

// ParseContentRange parses a Content-Range header, "bytes START-END/SIZE" or
// "bytes */SIZE": START is -1 in the second form, and SIZE is -1 when given as "*".
// The numbers are decimal digits only (RFC 9110 §14.4), START ≤ END, and END < SIZE
// when SIZE is known; anything else is not ok.
func ParseContentRange(s string) (start, size int64, ok bool) {
	if len(s) < len("bytes ") || !strings.EqualFold(s[:len("bytes ")], "bytes ") { // unit names are case-insensitive (§14.1)
		return 0, 0, false
	}
	span, sizeText, found := strings.Cut(s[len("bytes "):], "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sizeText != "*" {
		if size, ok = parseDigits(sizeText); !ok {
			return 0, 0, false
		}
	}
	if span == "*" {
		return -1, size, size >= 0 // "bytes */*" says nothing
	}
	startText, endText, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	start, ok1 := parseDigits(startText)
	end, ok2 := parseDigits(endText)
	if !ok1 || !ok2 || end < start || size >= 0 && end >= size {
		return 0, 0, false
	}
	return start, size, true
}

// parseDigits parses a non-empty string of decimal digits that fits an int64.
func parseDigits(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
