package fetch

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gptkit/internal/redact"
)

// fetchFile puts f in place: it returns at once if f.Dest checks out, else downloads
// it from f.URLs in turn.
func (c *config) fetchFile(ctx context.Context, f File) error {
	if f.Dest == "" {
		return &Error{Dest: "(no path)", Err: errors.New("a File needs a Dest")}
	}
	want, err := normalizeSHA256(f.SHA256)
	if err != nil {
		return &Error{Dest: f.Dest, Err: err}
	}
	f.SHA256 = want
	if err := os.MkdirAll(filepath.Dir(f.Dest), 0o755); err != nil {
		return &Error{Dest: f.Dest, Err: fmt.Errorf("create its directory: %w", err), Hint: "choose a writable directory"}
	}
	unlock, err := lockFile(ctx, f.Dest+".lock", c.Logger)
	if err != nil {
		if readOnly(err) {
			// A read-only directory (a shared, pre-staged copy) cannot hold the lock
			// file, but may well hold a good copy: nothing to download then.
			if ok, cerr := c.checkExisting(f); cerr == nil && ok {
				return nil
			}
		}
		return &Error{Dest: f.Dest, Err: err}
	}
	defer unlock()

	ok, err := c.checkExisting(f)
	if err != nil {
		return &Error{Dest: f.Dest, Err: err}
	}
	if ok {
		return nil
	}
	if len(f.URLs) == 0 {
		err := errors.New("the file is missing and there is no URL to download it from")
		return &Error{Dest: f.Dest, Err: err, Hint: c.Hint(f, err)}
	}
	var failed []SourceError
	// A .part begun by one of the sources is resumed from it first. (Without a sha256
	// another source's bytes are never spliced onto it: attempt asks the other source
	// for the whole file, and keeps the .part until it sends it.)
	urls := f.URLs
	if src := readPartSource(f.Dest + ".part"); src != nil {
		if i := slices.Index(urls, src.URL); i > 0 {
			urls = append(append([]string{src.URL}, urls[:i]...), urls[i+1:]...)
		}
	}
	for i, url := range urls {
		err := c.download(ctx, url, f)
		if err == nil {
			return nil
		}
		failed = append(failed, SourceError{URL: url, Err: err})
		if ctx.Err() != nil {
			return &Error{Dest: f.Dest, Sources: failed}
		}
		if le := (localError{}); errors.As(err, &le) {
			// This machine's failure: no other source would do better.
			return &Error{Dest: f.Dest, Sources: failed, Hint: fmt.Sprintf("the bytes downloaded so far are kept in %s.part: free space on its disk (or fix the directory), then rerun to resume", f.Dest)}
		}
		if i+1 < len(urls) {
			c.Logger.Warn("download failed; trying the next source", "url", redact.URL(url), "dest", f.Dest, "next", redact.URL(urls[i+1]), "err", redact.String(err.Error()))
		}
	}
	errs := make([]error, len(failed))
	for i, s := range failed {
		errs[i] = s.Err
	}
	return &Error{Dest: f.Dest, Sources: failed, Hint: c.Hint(f, errors.Join(errs...))}
}

// normalizeSHA256 lower-cases a hex sha256 and checks its form; "" stays "".
func normalizeSHA256(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", nil
	}
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		return "", fmt.Errorf("expected sha256 %q is not 64 hex digits", s)
	}
	return s, nil
}

// readOnly reports whether err says a file could not be created for lack of
// permission or on a read-only file system.
func readOnly(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// removeIfExists removes path; a missing path is no error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %w", err)
	}
	return nil
}
