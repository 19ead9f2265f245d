//go:build unix

package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// TestDirSymlinkedRoot opens a store, and lists a prefix, through symlinks to
// directories (a dataset directory linked to another disk): List once walked the
// link itself and found nothing, so prep took a finished dataset for damaged.
func TestDirSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	for _, k := range []string{"manifest.json", "train/a.bin", "train/a.idx"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(real, k)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, k), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := t.TempDir()
	link := filepath.Join(links, "pile")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "train"), filepath.Join(links, "train")); err != nil {
		t.Fatal(err)
	}
	st := mustOpen(t, link, Options{})
	if got := listKeys(t, st, ""); got != "manifest.json train/a.bin train/a.idx" {
		t.Fatalf("List through a symlinked root = %q", got)
	}
	if got := listKeys(t, st, "train/a"); got != "train/a.bin train/a.idx" {
		t.Fatalf("List(train/a) through a symlinked root = %q", got)
	}
	// A prefix whose directory is itself a link (links/train -> real/train).
	if got := listKeys(t, mustOpen(t, links, Options{}), "train/"); got != "train/a.bin train/a.idx" {
		t.Fatalf("List(train/) of a symlinked directory = %q", got)
	}
	// Sweep finds a crashed writer's temp file under the link.
	tmp := filepath.Join(real, "train", ".b.bin"+tempMarker+"0a1b")
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := Sweep(ctx, st, "", time.Hour); err != nil || n != 1 {
		t.Fatalf("Sweep through a symlinked root = %d, %v; want 1 removed", n, err)
	}
}
