//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive advisory lock (flock) on the file at path, creating
// it, and waits while another process or goroutine holds it, until ctx is done. The
// kernel drops the lock if the process dies. unlock removes the file, then releases
// the lock; a waiter that then wins the lock on the removed file notices (the path no
// longer names its file) and starts over, so two holders never coexist.
func lockFile(ctx context.Context, path string, log *slog.Logger) (unlock func(), err error) {
	logged := false
	for {
		file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		for {
			err = syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil || (!errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)) {
				break
			}
			if !logged {
				log.Info("waiting for another download of the same file", "lock", path)
				logged = true
			}
			select {
			case <-ctx.Done():
				file.Close()
				return nil, fmt.Errorf("wait for the lock %s: %w", path, context.Cause(ctx))
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, err1 := file.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return func() {
				os.Remove(path)
				syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
				file.Close()
			}, nil
		}
		file.Close() // the holder before us removed it: lock the new one
	}
}
