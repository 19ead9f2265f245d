package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReleaseRemoving leaves no lock file; a writer that opened the file just
// before it went locks the file now there, not the removed one: two writers
// never both hold the directory.
func TestLockReleaseRemoving(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := LockDir(ctx, st, "", "writer A")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseRemoving(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, WriterLockName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file after ReleaseRemoving: %v", err)
	}

	// B opens the lock file; before B's flock, A (holding it) removes it and
	// releases, and C takes the lock on a new file. B must find C there.
	a, err = LockDir(ctx, st, "", "writer A")
	if err != nil {
		t.Fatal(err)
	}
	var c *Lock
	opens := 0
	lockFileOpened = func() {
		opens++
		if opens == 1 {
			lockFileOpened = nil // (C's own open goes straight on)
			if err := a.ReleaseRemoving(); err != nil {
				t.Error(err)
			}
			if c, err = LockDir(ctx, st, "", "writer C"); err != nil {
				t.Error(err)
			}
			lockFileOpened = func() { opens++ }
		}
	}
	defer func() { lockFileOpened = nil }()
	_, err = LockDir(ctx, st, "", "writer B")
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("B after A removed the file B opened and C locked anew: %v, want ErrLocked", err)
	}
	if opens != 2 {
		t.Errorf("B opened the lock file %d times, want 2 (the removed one, then C's)", opens)
	}
	if c == nil || c.Check() != nil {
		t.Fatal("C does not hold the lock")
	}
	c.Release()
}

// B opened the lock file of a directory whose holder then removed the file and the
// directory (a run that failed having written nothing): B makes the directory again
// and holds the lock.
func TestLockAfterDirectoryRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	st, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := LockDir(ctx, st, "", "writer A")
	if err != nil {
		t.Fatal(err)
	}
	lockFileOpened = func() {
		lockFileOpened = nil
		if err := a.ReleaseRemoving(); err != nil {
			t.Error(err)
		}
		if err := os.Remove(dir); err != nil {
			t.Error(err)
		}
	}
	defer func() { lockFileOpened = nil }()
	b, err := LockDir(ctx, st, "", "writer B")
	if err != nil {
		t.Fatalf("B after A removed the lock file and the directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, WriterLockName)); err != nil {
		t.Errorf("B holds no lock file: %v", err)
	}
	b.Release()
}
