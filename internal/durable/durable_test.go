package durable

import (
	"errors"
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
