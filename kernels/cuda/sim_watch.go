package cuda

import (
	"errors"
	"fmt"
)

// What the NCCL watchdog (nccl_watch.go) needs of the simulated GPU: event
// queries that let a stream make progress in the background, as a GPU's does
// while the host polls, the health and abort of a simulated communicator, and
// faults to inject, so that the tests can show what the trainer does when a
// GPU hangs or NCCL fails.

// eventQuery reports whether the event's work has run. If not, a goroutine
// starts running the stream up to it (streams otherwise run only when waited
// for): the host polls, the device works, as on a GPU, and a collective that
// never completes leaves the host free to time it out.
func (d *simDriver) eventQuery(e event) (bool, error) {
	ev, err := d.event("cuEventQuery", e)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st, at := ev.s, ev.at
	switch {
	case d.sticky != nil:
		return false, d.sticky
	case st == nil || st.finished >= at:
		return true, nil
	}
	st.target = max(st.target, at)
	if !st.async {
		st.async = true
		go d.runBackground(st)
	}
	return false, nil
}

// runBackground runs st up to its target (which may grow meanwhile).
func (d *simDriver) runBackground(st *simStream) {
	for {
		d.mu.Lock()
		target := st.target
		if st.done >= target || d.sticky != nil || len(st.q) == 0 {
			st.async = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if err := d.flushTo(st, target); err != nil {
			d.mu.Lock()
			st.async = false
			d.mu.Unlock()
			return
		}
	}
}

// SimFault is a failure the simulated GPU can be told to have (Backend.InjectSimFault).
type SimFault string

const (
	// SimHang stops the backend's stream where it stands, as a kernel that
	// never finishes would: nothing queued after it runs. On a GPU only the
	// process's end frees such a GPU; on the simulator an aborted communicator
	// does too, after which the context is lost (CUDA_ERROR_LAUNCH_TIMEOUT).
	SimHang SimFault = "hang"
	// SimNCCLError makes the next collective never complete, with
	// ncclCommGetAsyncError reporting ncclSystemError, as when NCCL loses a
	// peer's connection; ncclCommAbort ends it.
	SimNCCLError SimFault = "ncclerror"
)

// errNotSimulated is returned by InjectSimFault on a real GPU.
var errNotSimulated = errors.New("cuda: faults can be injected into the simulated GPU (cuda-sim) only")

// InjectSimFault makes the simulated GPU fail as f says, for tests of failure
// handling; on a real GPU it returns an error.
func (b *Backend) InjectSimFault(f SimFault) error {
	if b.sim == nil {
		return errNotSimulated
	}
	switch f {
	case SimHang:
		b.enter()
		defer b.leave()
		d := b.sim
		return d.enqueue("a hung kernel (injected)", b.stream, func() error {
			<-d.hangRelease()
			return simErr("a hung kernel (injected)", errLaunchTimeout, "the kernel never finished; the communicator was aborted")
		})
	case SimNCCLError:
		n, err := b.ncclLib()
		if err != nil {
			return err
		}
		sn := n.(*simNCCL)
		sn.mu.Lock()
		sn.failNext = true
		sn.mu.Unlock()
		return nil
	}
	return fmt.Errorf("cuda: no simulated fault %q (want %q or %q)", f, SimHang, SimNCCLError)
}

// hangRelease is closed when the hangs of this simulated GPU end (an aborted
// communicator).
func (d *simDriver) hangRelease() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unhang == nil {
		d.unhang = make(chan struct{})
	}
	return d.unhang
}

func (d *simDriver) releaseHangs() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unhang == nil {
		d.unhang = make(chan struct{})
	}
	select {
	case <-d.unhang:
	default:
		close(d.unhang)
	}
}

// The simulated communicator's health and abort.

func (n *simNCCL) commGetAsyncError(h uintptr) error {
	c, err := n.comm("ncclCommGetAsyncError", h)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asyncErr
}

// commAbort ends the communicator: its collectives in flight return at once
// (their results undefined, as NCCL's), the ranks of other processes or
// goroutines go on waiting until their own watchdogs abort them, and the
// simulated GPU's injected hangs end.
func (n *simNCCL) commAbort(h uintptr) error {
	c, err := n.comm("ncclCommAbort", h)
	if err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.comms, h)
	n.mu.Unlock()
	c.abort()
	n.d.releaseHangs()
	return nil
}

func (c *simComm) abort() {
	c.abortOnce.Do(func() { close(c.aborted) })
	if g := c.g; g != nil {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

func (c *simComm) isAborted() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
	}
}

// failing is the collective an injected SimNCCLError replaces: it reports
// the error to ncclCommGetAsyncError and waits for the abort.
func (c *simComm) failing(call string) error {
	c.mu.Lock()
	c.asyncErr = fmt.Errorf("cuda: %s: %s: a peer's connection was lost (injected)", call, ncclResultNames[2])
	c.mu.Unlock()
	<-c.aborted
	return nil
}
