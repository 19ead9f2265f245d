//go:build !unix

package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

var errNotDir = errors.New("not a directory") // never matched: os errors report ErrNotExist

// fileETag is "SIZE-MTIMENANOS" in hex; without inodes it relies on Commit's fresh mtime.
func fileETag(fi fs.FileInfo) string {
	return fmt.Sprintf("0-%x-%x", fi.Size(), fi.ModTime().UnixNano())
}

// FileIdentity names the version of a local file: size and modification time.
func FileIdentity(fi fs.FileInfo) string {
	return fmt.Sprintf("%x-%x", fi.Size(), fi.ModTime().UnixNano())
}

// LockFile takes an exclusive lock named by p, within this process only.
func LockFile(p string) (unlock func(), err error) { return lockFile(p) }

var procLocks sync.Map // string → *sync.Mutex

// lockDir serializes commits within this process only: there is no flock here, so
// conditional commits are not safe against other processes on this platform.
func lockDir(dir string) (unlock func(), err error) { return lockFile(dir) }

// lockFile is an in-process mutex named by p.
func lockFile(p string) (unlock func(), err error) {
	m, _ := procLocks.LoadOrStore(p, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock, nil
}

// heldLocks are the writer lock files this process holds (there is no flock here: the
// lock excludes other writers of this process only).
var heldLocks sync.Map // string → struct{}

// tryLock takes f's lock within this process.
func tryLock(f *os.File) (bool, error) {
	_, taken := heldLocks.LoadOrStore(f.Name(), struct{}{})
	return !taken, nil
}

// dropLock forgets f's lock.
func dropLock(f *os.File) { heldLocks.Delete(f.Name()) }

// tempLocks: without flock a temp file's writer cannot be known alive; sweeps go by age.
const tempLocks = false

func holdTemp(f *os.File, p string) bool { return true }

func removeAbandoned(p string) bool { return os.Remove(p) == nil }

func linkUnsupported(err error) bool { return !errors.Is(err, fs.ErrExist) }
