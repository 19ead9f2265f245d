package cuda

import (
	"runtime"
	"testing"
	"time"
)

// TestEnterPanicReleasesLock: a cuCtxSetCurrent that fails in enter panics with the
// backend's lock and OS thread released, so the trainer's deferred cleanup after it
// recovers (Free, Close) runs instead of blocking on the lock for good (it did).
func TestEnterPanicReleasesLock(t *testing.T) {
	b := openSim(t, FP32, SimOptions{Memory: 64 << 20})
	good := b.ctx
	b.ctx = 2 // the simulated cuCtxSetCurrent refuses any other context

	panicked := func() (p bool) {
		defer func() {
			if recover() != nil {
				p = true
			}
		}()
		b.Sync()
		return false
	}()
	b.ctx = good
	if !panicked {
		t.Fatal("Sync with a context that cannot be made current did not panic")
	}

	done := make(chan struct{})
	go func() {
		b.Sync() // what the trainer's deferred cleanup does next (Free, Close)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		// Undo the leaked lock so the goroutine and the cleanup's Close can end.
		runtime.UnlockOSThread()
		b.mu.Unlock()
		<-done
		t.Error("after a failed cuCtxSetCurrent in enter the backend's mutex stayed locked: every later call blocks forever (enter must release b.mu and the OS thread before it panics)")
	}
}
