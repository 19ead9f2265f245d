//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package spec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// lockDir takes an exclusive advisory lock (flock) on dir, waiting while another
// process holds it, until ctx is done. The kernel drops the lock if the process dies.
func lockDir(ctx context.Context, dir string, log *slog.Logger) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("spec: lock cache directory: %w", err)
	}
	logged := false
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
				d.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			d.Close()
			return nil, fmt.Errorf("spec: lock cache directory %s: %w", dir, err)
		}
		if !logged {
			log.Info("waiting for another process downloading into the tokenizer cache", "dir", dir)
			logged = true
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, fmt.Errorf("spec: wait for the lock on %s: %w", dir, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
