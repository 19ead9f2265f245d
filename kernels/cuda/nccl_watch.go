package cuda

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The NCCL watchdog. A collective is queued on the backend's stream between two
// events; the host then polls, as PyTorch's NCCL watchdog does, instead of
// blocking in cuStreamSynchronize (which never returns when a peer is gone):
//
//   - the start event tells when this rank's GPU has reached the collective
//     (everything queued before it has run); the CollectiveWatch hears it, so a
//     rank whose GPU never gets there (a hung kernel) can be named;
//   - the end event tells when it is done;
//   - ncclCommGetAsyncError tells when NCCL has met an error in the background
//     (a peer's connection lost): the communicator is aborted and the error
//     returned;
//   - past the deadline (NCCLOptions.Timeout, --collective-timeout) the watch
//     is told (train/dist asks every rank where it is and names the ranks that
//     had not reached the collective), the communicator is aborted
//     (ncclCommAbort, which makes the collective's kernels return) and the
//     error returned.
//
// Abort does the same from another goroutine when the job failed elsewhere. A
// call into NCCL that blocks on the host (ncclCommInitRank while a peer never
// arrives) is not covered: the process-level guard of the trainer (the
// rendezvous store's verdict, then exit) ends that.

// DefaultCollectiveTimeout is a collective's deadline when NCCLOptions.Timeout
// is 0 (PyTorch's NCCL watchdog waits 10 minutes).
const DefaultCollectiveTimeout = 5 * time.Minute

// CollectiveWatch is told of each collective (train/dist's Comm implements it):
// its heartbeats then say which collective each rank is in, so that a deadline
// that passes names the ranks that never reached it.
type CollectiveWatch interface {
	// BeginCollective numbers a collective being queued.
	BeginCollective() int64
	// CollectiveStarted says this rank's GPU has reached collective seq.
	CollectiveStarted(seq int64)
	// CollectiveTimedOut reports a collective past its deadline and returns
	// the verdict: an error naming the ranks at fault (or nil).
	CollectiveTimedOut(seq int64, op string, after time.Duration) error
}

// watchdog is an NCCL communicator's watch state.
type watchdog struct {
	timeout    time.Duration
	watch      CollectiveWatch
	seq        int64 // the collectives' count when there is no watch
	start, end event

	commMu    sync.Mutex // guards NCCL.comm against ncclCommAbort
	abortCh   chan struct{}
	abortOnce sync.Once
	abortErr  error
}

// errAborted is what a collective of a communicator aborted without a cause returns.
var errAborted = errors.New("cuda: the NCCL communicator was aborted")

// initWatch sets up the watchdog of a new communicator (between enter and leave).
func (c *NCCL) initWatch(o NCCLOptions) error {
	c.w.timeout, c.w.watch = o.Timeout, o.Watch
	if c.w.timeout <= 0 {
		c.w.timeout = DefaultCollectiveTimeout
	}
	c.w.abortCh = make(chan struct{})
	var err error
	if c.w.start, err = c.b.drv.eventCreate(); err != nil {
		return err
	}
	c.w.end, err = c.b.drv.eventCreate()
	return err
}

// run queues one collective (call) between the watchdog's events and waits for it.
func (c *NCCL) run(ctx context.Context, op string, call func() error) error {
	select {
	case <-c.w.abortCh:
		return c.w.abortErr
	default:
	}
	if err := c.FinishCollectives(ctx); err != nil { // those of the communication stream come first
		return err
	}
	seq := c.nextSeq()
	c.b.enter()
	defer c.b.leave()
	drv := c.b.drv
	if err := drv.eventRecord(c.w.start, c.b.stream); err != nil {
		return err
	}
	c.w.commMu.Lock()
	err := errAborted
	if c.comm != 0 {
		err = call()
	}
	c.w.commMu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w (rank %d, collective #%d)", err, c.rank, seq)
		c.abortComm(err) // this rank's collectives no longer match the others'
		return err
	}
	if err := drv.eventRecord(c.w.end, c.b.stream); err != nil {
		return err
	}
	return c.wait(ctx, op, seq, c.w.start, c.w.end)
}

// nextSeq numbers a collective being queued (the watch's numbers when there is one).
func (c *NCCL) nextSeq() int64 {
	if c.w.watch != nil {
		return c.w.watch.BeginCollective()
	}
	c.w.seq++
	return c.w.seq
}

// wait polls the collective's events (start: its stream reached it; end: it
// is done) and the communicator's health until it is done, fails, is aborted,
// or its deadline (counted from now) passes.
func (c *NCCL) wait(ctx context.Context, op string, seq int64, start, end event) error {
	drv := c.b.drv
	deadline := watchNow().Add(c.w.timeout)
	started := false
	pause := 10 * time.Microsecond
	for {
		// The clock is read before the collective's events: one that has ended
		// by the time they are queried is not late, even if its deadline
		// passed meanwhile. (Read after them, a collective that ended between
		// the queries and the clock was reported timed out, and the watch
		// failed the group naming ranks that had finished it.)
		late := watchNow().After(deadline)
		if !started {
			ok, err := drv.eventQuery(start)
			if err != nil {
				return err
			}
			if ok {
				started = true
				if c.w.watch != nil {
					c.w.watch.CollectiveStarted(seq)
				}
			}
		}
		if started {
			ok, err := drv.eventQuery(end)
			if err != nil {
				return err
			}
			if ok {
				return c.Err() // nil, unless it ended because it was aborted (its result is undefined then)
			}
		}
		if err := c.asyncError(); err != nil {
			err = fmt.Errorf("cuda: rank %d: nccl %s (collective #%d): %w; the communicator is aborted", c.rank, op, seq, err)
			c.abortComm(err)
			return err
		}
		select {
		case <-c.w.abortCh:
			c.abortComm(nil)
			return c.w.abortErr
		case <-ctx.Done():
			err := fmt.Errorf("cuda: rank %d: nccl %s (collective #%d) cancelled: %w", c.rank, op, seq, context.Cause(ctx))
			c.abortComm(err)
			return err
		default:
		}
		if late {
			where := "though this rank's GPU is in it"
			if !started {
				where = "and this rank's GPU never reached it (the work queued before it did not finish)"
			}
			err := fmt.Errorf("cuda: rank %d: nccl %s (collective #%d) did not finish within %s, %s; the communicator is aborted",
				c.rank, op, seq, c.w.timeout, where)
			if c.w.watch != nil {
				if verdict := c.w.watch.CollectiveTimedOut(seq, "nccl "+op, c.w.timeout); verdict != nil {
					err = verdict
				}
			}
			c.abortComm(err)
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// watchNow is the watchdog's clock (time.Now; a variable for the tests, which
// move it past a collective's deadline when they choose).
var watchNow = time.Now

// asyncError is ncclCommGetAsyncError of a live communicator.
func (c *NCCL) asyncError() error {
	c.w.commMu.Lock()
	defer c.w.commMu.Unlock()
	if c.comm == 0 {
		return nil
	}
	return c.n.commGetAsyncError(c.comm)
}

// setAbort records the cause of the abort (the first one; nil: errAborted)
// and tells a collective in flight.
func (c *NCCL) setAbort(cause error) {
	c.w.abortOnce.Do(func() {
		if cause == nil {
			cause = errAborted
		}
		c.w.abortErr = cause
		close(c.w.abortCh)
	})
}

// abortNow calls ncclCommAbort on a live communicator (commMu held).
func (c *NCCL) abortNow() {
	if c.comm != 0 {
		c.n.commAbort(c.comm)
		c.comm = 0
	}
}

// abortComm aborts the communicator (once) and records cause (nil: keep the
// cause already recorded, or errAborted).
func (c *NCCL) abortComm(cause error) {
	c.setAbort(cause)
	c.w.commMu.Lock()
	defer c.w.commMu.Unlock()
	c.abortNow()
}

// Abort aborts the communicator because of err (the job failed elsewhere: a
// rank died, the rendezvous store said so): a collective in flight returns err
// promptly, and so does every later one. Safe from any goroutine.
func (c *NCCL) Abort(err error) {
	c.setAbort(err)
	// With no collective in flight nothing polls: abort here. (One in flight
	// does it itself; one blocked inside an NCCL call holds commMu, and the
	// process's own guard ends it.)
	if c.w.commMu.TryLock() {
		c.b.withContext(c.abortNow)
		c.w.commMu.Unlock()
	}
}

// Err returns the error the communicator was aborted with, or nil.
func (c *NCCL) Err() error {
	select {
	case <-c.w.abortCh:
		return c.w.abortErr
	default:
		return nil
	}
}

// destroy frees the communicator (ncclCommDestroy; ncclCommAbort when
// collectives are still queued; nothing when it was aborted) and the
// watchdog's events.
func (c *NCCL) destroy() error {
	c.b.enter() // (the lock order of run: the backend, then commMu)
	defer c.b.leave()
	c.w.commMu.Lock()
	defer c.w.commMu.Unlock()
	var err error
	if c.comm != 0 && (len(c.async.pending) > 0 || c.Err() != nil) {
		// Collectives queued and never waited for (the step failed between
		// Start and FinishCollectives): ncclCommDestroy would flush them,
		// waiting for peers that may never come. Abort instead; and so when
		// Abort was called but did not abort (another call held commMu).
		c.setAbort(nil)
		c.abortNow()
	}
	if c.comm != 0 {
		err = c.n.commDestroy(c.comm)
		c.comm = 0
	}
	for _, e := range append([]event{c.w.start, c.w.end}, c.async.events()...) {
		if e != 0 {
			err = errors.Join(err, c.b.drv.eventDestroy(e))
		}
	}
	c.w.start, c.w.end = 0, 0
	c.async.free, c.async.pending = nil, nil
	if s := c.async.stream; s != 0 && c.Err() == nil { // (an aborted one may hold a hung collective)
		err = errors.Join(err, c.b.drv.streamDestroy(s))
	}
	c.async.stream = 0
	return err
}

// The real NCCL's health and abort.

func (n *ncclLib) commGetAsyncError(c uintptr) error {
	var r int32
	if err := ncclCheck("ncclCommGetAsyncError", n.asyncErrorFn(c, &r)); err != nil {
		return err
	}
	if r == 0 || r == 7 { // ncclSuccess, ncclInProgress
		return nil
	}
	return ncclCheck("NCCL in the background", r)
}

func (n *ncclLib) commAbort(c uintptr) error { return ncclCheck("ncclCommAbort", n.abortFn(c)) }
