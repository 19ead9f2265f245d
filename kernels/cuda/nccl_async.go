package cuda

import (
	"context"
	"fmt"

	"gptkit/kernels"
)

// Collectives on a communication stream, as PyTorch's DDP and Megatron run the
// gradient buckets' all-reduces: Start* queues a collective on the
// communicator's own stream behind an event recorded on the backend's (compute)
// stream, so it reads what the compute stream had queued before the call
// (gradients the backward pass has finished), and returns at once: the compute
// stream goes on with the rest of the backward while the collective runs.
// FinishCollectives makes the compute stream wait for the communication
// stream's last event (so what is queued after it, the gradient norm and the
// optimizer, reads the reduced gradients) and watches each collective to its
// end as the synchronous ones are watched (nccl_watch.go: deadline, NCCL's
// asynchronous errors, abort).
//
//	compute: ... kernel ─ record(ready₁) ─ kernel ... ─ record(ready₂) ─ kernel ... ─ wait(end₂) ─ norm, AdamW
//	comm:              wait(ready₁) ─ start₁ ─ all-reduce₁ ─ end₁ ─ wait(ready₂) ─ start₂ ─ all-reduce₂ ─ end₂

// asyncState is the communication stream's state.
type asyncState struct {
	stream   stream
	pending  []asyncCollective
	free     []event // events to reuse
	skipWait bool    // tests: queue without making the stream wait for the compute stream
}

// asyncCollective is a collective queued on the communication stream. It is
// numbered for the watch (CollectiveWatch.BeginCollective) when the host
// begins to wait for it, not when it is queued: the watch's position (the
// latest collective begun, and whether this rank's GPU has reached it) then
// means what it means for a synchronous collective, so a rank whose GPU never
// reaches a bucket's all-reduce is named as such.
type asyncCollective struct {
	op                string
	ready, start, end event
}

func (a *asyncState) events() []event {
	evs := append([]event(nil), a.free...)
	for _, p := range a.pending {
		evs = append(evs, p.ready, p.start, p.end)
	}
	return evs
}

// PlantMissingWait makes the collectives of the communication stream skip
// their wait for the compute stream: they may then read gradients the
// backward pass is still writing. For tests only: the simulated GPU's hazard
// check must catch it (sim_streams.go).
func (c *NCCL) PlantMissingWait() { c.async.skipWait = true }

// StartAllReduceSumTensor queues AllReduceSumTensor of t on the communication
// stream, after the work queued so far on the compute stream, and returns
// without waiting; FinishCollectives waits. t may be float32, bfloat16 or
// float16.
func (c *NCCL) StartAllReduceSumTensor(ctx context.Context, t kernels.Tensor) error {
	dt, err := c.tensorType("all-reduce", t)
	if err != nil || t.Len() == 0 {
		return err
	}
	return c.start(ctx, "all-reduce", func(s stream) error {
		return c.n.allReduce(t.Addr(), t.Addr(), t.Len(), dt, ncclSum, c.comm, s)
	})
}

// StartReduceSumTensor queues an ncclReduce of t to rank root on the
// communication stream, as StartAllReduceSumTensor does: afterwards root's t
// holds the sum over the ranks, the others' t is unchanged.
func (c *NCCL) StartReduceSumTensor(ctx context.Context, t kernels.Tensor, root int) error {
	dt, err := c.tensorType("reduce", t)
	if err != nil || t.Len() == 0 {
		return err
	}
	if root < 0 || root >= c.world {
		return fmt.Errorf("cuda: nccl reduce to rank %d in a world of %d", root, c.world)
	}
	return c.start(ctx, "reduce", func(s stream) error {
		return c.n.reduce(t.Addr(), t.Addr(), t.Len(), dt, ncclSum, root, c.comm, s)
	})
}

// StartReduceScatterSumTensor queues ReduceScatterSumTensor of t on the
// communication stream, as StartAllReduceSumTensor does.
func (c *NCCL) StartReduceScatterSumTensor(ctx context.Context, t kernels.Tensor) error {
	dt, err := c.tensorType("reduce-scatter", t)
	if err != nil || t.Len() == 0 {
		return err
	}
	if t.Len()%c.world != 0 {
		return fmt.Errorf("cuda: nccl reduce-scatter of %d elements over %d ranks", t.Len(), c.world)
	}
	part := t.Len() / c.world
	return c.start(ctx, "reduce-scatter", func(s stream) error {
		return c.n.reduceScatter(t.Addr(), t.Addr()+uintptr(t.DType().Size()*part*c.rank), part, dt, ncclSum, c.comm, s)
	})
}

// start queues one collective (call, on the communication stream) between its
// events.
func (c *NCCL) start(ctx context.Context, op string, call func(s stream) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return err
	}
	c.b.enter()
	defer c.b.leave()
	drv, a := c.b.drv, &c.async
	if a.stream == 0 {
		s, err := drv.streamCreate()
		if err != nil {
			return err
		}
		a.stream = s
		if c.b.sim != nil {
			c.b.sim.label(s, "comm")
		}
	}
	var evs [3]event
	for i := range evs {
		if n := len(a.free); n > 0 {
			evs[i], a.free = a.free[n-1], a.free[:n-1]
			continue
		}
		e, err := drv.eventCreate()
		if err != nil {
			return err
		}
		evs[i] = e
	}
	ac := asyncCollective{op: op, ready: evs[0], start: evs[1], end: evs[2]}
	a.pending = append(a.pending, ac) // (its events are the pending's now, whatever happens)
	if err := drv.eventRecord(ac.ready, c.b.stream); err != nil {
		return err
	}
	if !a.skipWait {
		if err := drv.streamWaitEvent(a.stream, ac.ready); err != nil {
			return err
		}
	}
	if err := drv.eventRecord(ac.start, a.stream); err != nil {
		return err
	}
	c.w.commMu.Lock()
	err := errAborted
	if c.comm != 0 {
		err = call(a.stream)
	}
	c.w.commMu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w (rank %d, nccl %s queued on the communication stream)", err, c.rank, op)
		c.abortComm(err) // this rank's collectives no longer match the others'
		return err
	}
	return drv.eventRecord(ac.end, a.stream)
}

// FinishCollectives makes the compute stream wait for the collectives queued
// on the communication stream and watches them to their end, in order (each
// numbered, and given its deadline, when the wait for it begins). Nothing when
// none is queued.
func (c *NCCL) FinishCollectives(ctx context.Context) error {
	a := &c.async
	if len(a.pending) == 0 {
		return nil
	}
	c.b.enter()
	defer c.b.leave()
	pending := a.pending
	a.pending = nil
	defer func() {
		for _, p := range pending {
			a.free = append(a.free, p.ready, p.start, p.end)
		}
	}()
	if err := c.b.drv.streamWaitEvent(c.b.stream, pending[len(pending)-1].end); err != nil {
		return err
	}
	for _, p := range pending {
		if err := c.wait(ctx, p.op, c.nextSeq(), p.start, p.end); err != nil {
			return err
		}
	}
	return nil
}

// tensorType checks that t is this backend's tensor of a type NCCL reduces,
// and returns that type.
func (c *NCCL) tensorType(op string, t kernels.Tensor) (ncclDataType, error) {
	if t.Owner() == c.b {
		switch t.DType() {
		case kernels.Float32:
			return ncclFloat32, nil
		case kernels.BFloat16:
			return ncclBfloat16, nil
		case kernels.Float16:
			return ncclFloat16, nil
		}
	}
	return 0, fmt.Errorf("cuda: nccl %s of %s: want a float32, bfloat16 or float16 tensor of this cuda backend", op, t)
}
