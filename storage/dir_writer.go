package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"time"

	"gptkit/internal/durable"
)

func (s *dirStore) Create(ctx context.Context, key string, opts ...WriteOption) (Writer, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	o := ApplyWriteOptions(opts)
	final := s.path(key)
	if err := checkWriteOptions(final, o); err != nil {
		return nil, err
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", final, err)
	}
	s.removeAbandonedTemps(dir, path.Base(key))
	f, tmp, err := createTemp(dir, path.Base(key))
	if err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", final, err)
	}
	return &dirWriter{ctx: ctx, f: f, tmp: tmp, final: final, opts: o, log: s.log}, nil
}

// createTemp creates ".NAME.tmp-RANDOM" in dir with mode 0666 less the umask, locked
// by this writer (holdTemp) until it is closed.
func createTemp(dir, name string) (*os.File, string, error) {
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		p := filepath.Join(dir, "."+name+tempMarker+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil && !holdTemp(f, p) {
			f.Close() // swept before it was locked: make another
			continue
		}
		return f, p, err
	}
	return nil, "", fmt.Errorf("cannot create a unique temp file in %s", dir)
}

// removeAbandonedTemps removes the temp files of name in dir that no live writer holds
// (left by a writer killed before Commit or Abort): a rerun that writes name again
// cleans up after the run that died. It returns how many it removed.
func (s *dirStore) removeAbandonedTemps(dir, name string) int {
	removed := removeDeadTemps(dir, name)
	for _, p := range removed {
		s.log.Info("storage: removed a temp file a dead writer left", "path", p)
	}
	return len(removed)
}

// removeDeadTemps removes the temp files of name in dir (createTemp's) that no live
// writer holds, and returns their paths.
func removeDeadTemps(dir, name string) []string {
	if !tempLocks {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(name)+tempMarker+"*"))
	var removed []string
	for _, p := range matches {
		if isTempName(filepath.Base(p)) && removeAbandoned(p) {
			removed = append(removed, p)
		}
	}
	return removed
}

// globEscape quotes the pattern characters of filepath.Match in s.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// dirWriter writes a temp file and publishes it at Commit.
type dirWriter struct {
	ctx   context.Context
	f     *os.File
	tmp   string
	final string
	opts  WriteOptions
	log   *slog.Logger
	done  bool
	err   error // first write error; Commit reports it

	written, flushed int64 // bytes written; bytes handed to early writeback
}

// writebackChunk is how often a dirWriter asks the kernel to start writing its pages out
// (startWriteback), so that Commit's fsync finds little left to flush: without it, a
// multi-GB shard's whole fsync happened at Commit, after the work was done.
const writebackChunk = 8 << 20

func (w *dirWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("storage: write %s: %w", w.final, errDone)
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.written += int64(n)
	if err != nil {
		w.err = fmt.Errorf("storage: write %s: %w", w.final, err)
		return n, w.err
	}
	if w.written-w.flushed >= writebackChunk {
		startWriteback(w.f, w.flushed, w.written-w.flushed)
		w.flushed = w.written
	}
	return n, nil
}

func (w *dirWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: abort %s: remove temp file: %w", w.final, err)
	}
	return nil
}

func (w *dirWriter) Commit() error {
	if w.done {
		return fmt.Errorf("storage: commit %s: %w", w.final, errDone)
	}
	err := w.commit()
	if err != nil {
		w.Abort()
	}
	w.done = true
	return err
}

func (w *dirWriter) commit() error {
	if w.err != nil {
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("storage: commit %s: %w", w.final, err)
	}
	// A fresh nanosecond mtime makes this version's ETag unique (see the file comment).
	now := time.Now()
	if err := os.Chtimes(w.tmp, now, now); err != nil {
		return fmt.Errorf("storage: commit %s: %w", w.final, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("storage: commit %s: sync: %w", w.final, err)
	}
	// The temp file stays open (and locked, see holdTemp) until it is published, so
	// that no sweep takes it for a dead writer's.
	dir := filepath.Dir(w.final)
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("storage: commit %s: %w", w.final, err)
	}
	err = w.publish()
	unlock()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("storage: commit %s: %w", w.final, cerr)
	}
	if err != nil {
		return err
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: commit %s: %w", w.final, err)
	}
	return nil
}

// publish moves the temp file to its final name; the caller holds the directory lock.
func (w *dirWriter) publish() error {
	switch {
	case w.opts.IfAbsent:
		err := os.Link(w.tmp, w.final)
		if err == nil {
			os.Remove(w.tmp)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return preconditionError(w.final, "the key already exists (IfAbsent)")
		}
		if !linkUnsupported(err) {
			return fmt.Errorf("storage: commit %s: %w", w.final, err)
		}
		w.log.Debug("storage: hard links unsupported; IfAbsent uses check-and-rename under the lock", "path", w.final)
		if _, err := os.Lstat(w.final); err == nil {
			return preconditionError(w.final, "the key already exists (IfAbsent)")
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storage: commit %s: %w", w.final, err)
		}
	case w.opts.IfMatch != "":
		fi, err := os.Stat(w.final)
		if errors.Is(err, fs.ErrNotExist) {
			return preconditionError(w.final, fmt.Sprintf("the key no longer exists (IfMatch %s)", w.opts.IfMatch))
		}
		if err != nil {
			return fmt.Errorf("storage: commit %s: %w", w.final, err)
		}
		if got := fileETag(fi); got != w.opts.IfMatch {
			return preconditionError(w.final, fmt.Sprintf("ETag is %s, not %s (IfMatch)", got, w.opts.IfMatch))
		}
	}
	if err := os.Rename(w.tmp, w.final); err != nil {
		return fmt.Errorf("storage: commit %s: %w", w.final, err)
	}
	return nil
}
