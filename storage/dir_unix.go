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

// syncDir fsyncs a directory so that renames and unlinks in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// linkUnsupported reports whether link(2) failed because the file system has no hard links.
func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EMLINK)
}
