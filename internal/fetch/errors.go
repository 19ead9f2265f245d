package fetch

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"gptkit/internal/redact"
)

// Sentinels for errors.Is on the errors Fetch returns.
var (
	// ErrNotFound: the server answered 404, 410 or 403 (S3 answers 403 for a
	// missing object in a bucket that cannot be listed).
	ErrNotFound = errors.New("not found")
	// ErrMismatch: a downloaded or existing file has the wrong size or sha256.
	ErrMismatch = errors.New("file does not match")
	// ErrInvalid: Options.Validate rejected a file.
	ErrInvalid = errors.New("file is not valid")
)

// Error is what Fetch and FetchOne return when a file could not be put in place.
type Error struct {
	Dest    string        // the local path
	Sources []SourceError // one per URL tried, in order
	Err     error         // a failure tied to no URL (directory, lock, context), or nil
	Hint    string        // the next step to suggest
}

// SourceError says why one URL failed.
type SourceError struct {
	URL string
	Err error
}

// Error names the file, each URL tried with why it failed, and the hint, on one line.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, "fetch: %s: %v", e.Dest, e.Err)
	case len(e.Sources) == 1:
		fmt.Fprintf(&b, "fetch: download %s to %s: %v", redact.URL(e.Sources[0].URL), e.Dest, redact.String(fmt.Sprint(e.Sources[0].Err)))
	default:
		fmt.Fprintf(&b, "fetch: download %s: all %d sources failed:", e.Dest, len(e.Sources))
		for i, s := range e.Sources {
			fmt.Fprintf(&b, " [%d] %s: %v", i+1, redact.URL(s.URL), redact.String(fmt.Sprint(s.Err)))
		}
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns every cause, so errors.Is and errors.As see through an *Error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, s := range e.Sources {
		errs = append(errs, s.Err)
	}
	return errs
}

// StatusError is an HTTP answer that is not the file.
type StatusError struct {
	Code   int
	Status string // e.g. "404 Not Found"

	retryAfter time.Duration // the server's Retry-After, or 0
}

// Error says what the server answered.
func (e *StatusError) Error() string { return "server answered " + e.Status }

// Is makes errors.Is(err, ErrNotFound) true for 403, 404 and 410.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && (e.Code == http.StatusNotFound || e.Code == http.StatusGone || e.Code == http.StatusForbidden)
}

// transient reports whether retrying the request may help.
func (e *StatusError) transient() bool {
	return e.Code == http.StatusRequestTimeout || e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// MismatchError is a file whose size or sha256 is not the expected one.
type MismatchError struct {
	What      string // "sha256" or "size"
	Got, Want string
	// Announced is true when the server announced the wrong size before sending the
	// file, false when the bytes were checked.
	Announced bool
}

// Error says what was found and what was expected.
func (e *MismatchError) Error() string {
	switch {
	case e.What == "size" && e.Announced:
		return fmt.Sprintf("the server says the file has %s bytes, want %s", e.Got, e.Want)
	case e.What == "size":
		return fmt.Sprintf("got %s bytes, want %s; the file was discarded", e.Got, e.Want)
	}
	return fmt.Sprintf("%s is %s, want %s; the file was discarded", e.What, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// invalidError wraps an Options.Validate failure.
type invalidError struct{ err error }

// Error is the check's message; the file was removed.
func (e invalidError) Error() string { return e.err.Error() + "; the file was discarded" }

// Unwrap makes errors.Is see both the check's error and ErrInvalid.
func (e invalidError) Unwrap() []error { return []error{e.err, ErrInvalid} }

// permanentError marks an attempt's error that retrying the same URL will not fix.
type permanentError struct{ err error }

// Error is the wrapped error's message.
func (e permanentError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e permanentError) Unwrap() error { return e.err }
