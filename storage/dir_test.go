//go:build unix

package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestDirTempFilesAreHidden(t *testing.T) {
	root := t.TempDir()
	st := mustOpen(t, root, Options{})
	w, err := st.Create(ctx, "a/b.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.Write([]byte("partial"))
	entries, _ := os.ReadDir(filepath.Join(root, "a"))
	if len(entries) != 1 || !reservedName(entries[0].Name()) {
		t.Fatalf("a/ holds %v, want one temp file", entries)
	}
	if got := listKeys(t, st, ""); got != "" {
		t.Fatalf("List shows %q while only a temp file exists", got)
	}
	if _, err := st.Stat(ctx, "a/"+entries[0].Name()); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Stat of the temp file's name: %v, want ErrInvalidKey", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	// The lock file stays but is never listed.
	if got := listKeys(t, st, ""); got != "a/b.bin" {
		t.Fatalf("List = %q", got)
	}
}

func TestDirCommitHonoursUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	st := mustOpen(t, t.TempDir(), Options{})
	put(t, st, "f", []byte("x"))
	p, _ := st.LocalPath("f")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644 (0666 less umask 022)", fi.Mode().Perm())
	}
}

func TestDirCancelledCommitLeavesNothing(t *testing.T) {
	st := mustOpen(t, t.TempDir(), Options{})
	cctx, cancel := context.WithCancel(ctx)
	w, err := st.Create(cctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x"))
	cancel()
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit: %v, want context.Canceled", err)
	}
	assertNoLeftovers(t, st, "k")
	if _, err := st.Stat(ctx, "k"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Stat: %v", err)
	}
}

func TestDirOpenedFileKeepsItsVersion(t *testing.T) {
	st := mustOpen(t, "file://"+t.TempDir(), Options{})
	put(t, st, "k", []byte("one"))
	o, err := st.Open(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	put(t, st, "k", []byte("two!"))
	buf := make([]byte, 3)
	if _, err := o.ReadAt(buf, 0); err != nil || string(buf) != "one" || o.Size() != 3 {
		t.Fatalf("reading an object replaced after Open: %q, %v (size %d)", buf, err, o.Size())
	}
}
