package dist

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Collectives that run outside the ring (NCCL's, on GPUs: train/dist's ring then
// only carries what the communicator itself needs) are watched by the same
// machinery as the ring's own: the rank tells the communicator when it begins
// one (BeginCollective) and when its device has started it (CollectiveStarted),
// the heartbeats carry that position, and a rank whose collective has not
// finished within its deadline reports it (CollectiveTimedOut): the store asks
// every rank where it is and fails the group naming the ranks that had not
// reached the collective, alive or not. kernels/cuda's NCCL calls these through
// its CollectiveWatch interface.

// externalState is the position of the collectives run outside the ring.
type externalState struct {
	on      atomic.Bool  // some collective was begun: the heartbeats report these
	seq     atomic.Int64 // the number of the latest one begun
	started atomic.Bool  // the latest one has started on this rank's device (or finished)
}

// position is what the heartbeats report: the latest collective's number and
// whether this rank has reached it (is in it, or has finished it): for NCCL's,
// whether its device has started it; a ring collective's number is taken as
// the rank enters it, so a rank has reached every ring collective it has
// numbered. (A rank that had finished a collective once reported that it was
// not in it, as one that had not reached it does, and the store named it
// among the ranks that did not arrive.)
func (c *Comm) position() (int64, bool) {
	if c.ext.on.Load() {
		return c.ext.seq.Load(), c.ext.started.Load()
	}
	seq := c.seq.Load()
	return seq, seq > 0
}

// reportSeq is the number a timed-out ring collective reports: its own, or,
// when the ring carries a collective begun outside it (the simulated NCCL
// over the ring), that one's.
func (c *Comm) reportSeq(ringSeq int64) int64 {
	if c.ext.on.Load() {
		return c.ext.seq.Load()
	}
	return ringSeq
}

// BeginCollective marks the start of a collective this communicator does not
// run (an NCCL collective the host has just queued) and returns its number,
// counted from 1 on every rank alike. From the first call on, the heartbeats
// report these numbers rather than the ring's.
func (c *Comm) BeginCollective() int64 {
	c.ext.on.Store(true)
	c.ext.started.Store(false)
	return c.ext.seq.Add(1)
}

// CollectiveStarted says the device of this rank has reached collective seq
// (the work queued before it is done): a rank whose device never gets there
// (a hung kernel) is then told apart from one that waits inside it.
func (c *Comm) CollectiveStarted(seq int64) {
	if c.ext.seq.Load() == seq {
		c.ext.started.Store(true)
	}
}

// CollectiveTimedOut reports that collective seq (op names it) has not
// finished within after on this rank. The store asks every rank where it is
// and fails the group naming the ranks that had not reached it; the error
// that says so is returned (the communicator is aborted with it). When no
// verdict comes within a few seconds, this rank fails the group itself.
func (c *Comm) CollectiveTimedOut(seq int64, op string, after time.Duration) error {
	if err := c.Err(); err != nil {
		return err
	}
	if c.store != nil {
		c.store.send(message{Type: msgTimeout, Seq: seq, Op: op, Reason: after.String()})
	}
	select {
	case <-c.aborted:
	case <-time.After(c.grace):
		c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s) did not finish within %s", c.rank, seq, op, after), true)
	}
	return c.Err()
}
