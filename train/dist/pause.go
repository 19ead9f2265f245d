package dist

import (
	"fmt"
	"time"
)

// A process that is stopped (SIGSTOP, Ctrl-Z) or descheduled for long and then resumes
// finds every timer it had due at once. Without care the store would then blame the
// ranks for the heartbeats it could not read while it was stopped itself, and a rank (or
// a launcher) would blame the store for answers it could not read. A pauseClock notices
// such a gap in its own owner's ticks, so that messages name the real cause.
type pauseClock struct {
	threshold time.Duration // a gap between ticks longer than this is a pause
	last      time.Time     // the previous tick (zero: none yet)
	paused    time.Duration // the last pause's length
	resumed   time.Time     // when it ended (zero: no pause yet)
}

// newPauseClock returns a clock that calls a gap of more than threshold a pause.
func newPauseClock(threshold time.Duration) *pauseClock {
	return &pauseClock{threshold: threshold, last: time.Now()}
}

// tick records a tick at now and reports the gap since the previous one when it was a
// pause. (time.Now's monotonic clock runs on while a process is stopped.)
func (c *pauseClock) tick(now time.Time) (time.Duration, bool) {
	gap := now.Sub(c.last)
	c.last = now
	if gap <= c.threshold {
		return 0, false
	}
	c.paused, c.resumed = gap, now
	return gap, true
}

// recent returns the last pause's length if it ended less than window before now.
func (c *pauseClock) recent(now time.Time, window time.Duration) (time.Duration, bool) {
	if c.resumed.IsZero() || now.Sub(c.resumed) > window {
		return 0, false
	}
	return c.paused, true
}

// pauseNote says that who did not run for d, the cause of what follows it.
func pauseNote(who string, d time.Duration) string {
	return fmt.Sprintf("%s did not run for %s (stopped with SIGSTOP or Ctrl-Z, or its machine was suspended), so the ranks lost the rendezvous store it hosts", who, d.Round(100*time.Millisecond))
}
