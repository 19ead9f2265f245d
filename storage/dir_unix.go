//go:build unix

package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

var errNotDir = syscall.ENOTDIR

// fileETag is "INODE-SIZE-MTIMENANOS" in hex (see dir.go).
func fileETag(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf("%x-%x-%x", ino, fi.Size(), fi.ModTime().UnixNano())
}

// FileIdentity names the version of a local file: device, inode, size, and modification
// and change times (nanoseconds). Rewriting the file in place changes the change time
// even where the modification time is set back, and replacing it changes the inode; a
// cache of what was found in a file (a verified checksum) is valid while it is the same.
func FileIdentity(fi fs.FileInfo) string {
	var dev, ino uint64
	var ctime int64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), uint64(st.Ino)
		ctime = changeTime(st)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", dev, ino, fi.Size(), fi.ModTime().UnixNano(), ctime)
}

// LockFile takes an exclusive lock named by the local file p (created if missing),
// which excludes other processes (flock) and other goroutines of this one; a process
// that dies releases it. unlock releases it.
func LockFile(p string) (unlock func(), err error) { return lockFile(p) }

// procLocks holds one mutex per lock file path, for goroutines of this process.
var procLocks sync.Map // string → *sync.Mutex

// lockDir takes the exclusive commit lock of dir (see lockFile) on dir/.gptkit.lock.
func lockDir(dir string) (unlock func(), err error) { return lockFile(filepath.Join(dir, lockName)) }

// lockFile takes an exclusive lock named by the file p (created if missing): an in-process
// mutex, then flock(2). unlock releases both.
func lockFile(p string) (unlock func(), err error) {
	m, _ := procLocks.LoadOrStore(p, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		mu.Unlock()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() {
		f.Close() // releases the flock
		mu.Unlock()
	}, nil
}

// tempLocks: a temp file's writer holds a lock on it, so a dead writer's temp files can
// be told from a live one's (see holdTemp).
const tempLocks = true

// holdTemp locks the new temp file f (flock, exclusive) for as long as its writer keeps
// it open: the kernel drops the lock when the writer closes it or dies, which is how
// sweeps tell a dead writer's temp file (abandoned) from a live one's. It reports
// whether f is locked and still at p: a sweep may have locked it (to remove it) or
// removed it between its creation and the lock, and then the caller makes another.
func holdTemp(f *os.File, p string) bool {
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false // a sweep holds it and removes it
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(p)
	return err == nil && os.SameFile(fi, pi)
}

// removeAbandoned removes the temp file at p if it has no live writer: if its lock can
// be taken (its writer closed it without Commit or Abort, or died). The lock is held
// while the file is removed, so that a writer that has just created it and not yet
// locked it finds it gone (holdTemp) rather than losing it later.
func removeAbandoned(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if held, _ := tryLock(f); !held {
		return false
	}
	return os.Remove(p) == nil
}

// tryLock takes f's flock without waiting: held is false when another open file (of
// this process or another) holds it.
func tryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// dropLock: closing f drops its flock.
func dropLock(*os.File) {}

// linkUnsupported reports whether link(2) failed because the file system has no hard links.
func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EMLINK)
}
