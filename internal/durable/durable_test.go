package durable

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSyncDir: a directory syncs; a missing one is an error naming it; the errors of a
// file system that cannot sync directories are not errors.
func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); supported && (err == nil || !strings.Contains(err.Error(), missing)) {
		t.Errorf("SyncDir of a missing directory: %v, want an error naming it", err)
	}
	for _, err := range []error{syscall.EINVAL, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.ENOSYS, errors.ErrUnsupported} {
		if supported && !cannotSync(&os.PathError{Op: "sync", Path: dir, Err: err}) {
			t.Errorf("%v: taken for a failure to sync, not for a file system that cannot", err)
		}
	}
	if cannotSync(&os.PathError{Op: "sync", Path: dir, Err: syscall.EIO}) {
		t.Error("EIO taken for a file system that cannot sync directories")
	}
}

// TestWriteFunc: a file is replaced whole, with its mode, and its directory synced
// after; a write that fails part way leaves the earlier file and no temporary file,
// and its error comes back as it is.
func TestWriteFunc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	var synced []string
	defer func(f func(string) error) { DirSync = f }(DirSync)
	DirSync = func(d string) error {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the directory was synced before the rename: %v", err)
		}
		synced = append(synced, d)
		return SyncDir(d)
	}
	if err := WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("%s holds %q (%v), want \"new\"", path, got, err)
	}
	if fi, _ := os.Stat(path); supported && fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if len(synced) != 2 || synced[0] != dir || synced[1] != dir {
		t.Errorf("synced %q, want %s after each write", synced, dir)
	}

	errFull := errors.New("no space left on device (test)")
	err = WriteFunc(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half of it"))
		return errFull
	})
	if err != errFull {
		t.Errorf("a failed write returned %v, want its own error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("after a failed write %s holds %q, want the earlier \"new\"", path, got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory holds %v, want only %s", names, filepath.Base(path))
	}
	if len(synced) != 2 {
		t.Errorf("a failed write synced the directory")
	}

	missing := filepath.Join(dir, "missing", "f")
	if err := WriteFile(missing, nil, 0o644); err == nil || !strings.Contains(err.Error(), filepath.Dir(missing)) {
		t.Errorf("a write into a missing directory: %v, want an error naming it", err)
	}
}
