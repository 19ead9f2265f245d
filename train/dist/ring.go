package dist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// The collectives' codes in the header that starts each one on the wire.
const (
	opAllReduceSum = iota + 1
	opAllReduceAvg
	opBroadcast
	opBarrier
	opReduceScatter
	opAllGather
)

var opNames = map[uint32]string{opAllReduceSum: "all-reduce sum", opAllReduceAvg: "all-reduce avg", opBroadcast: "broadcast",
	opBarrier: "barrier", opReduceScatter: "reduce-scatter", opAllGather: "all-gather"}

func opName(op uint32) string {
	name := opNames[op&0xff]
	if op&0xff == opBroadcast {
		name = fmt.Sprintf("broadcast from rank %d", op>>8)
	}
	return name
}

// headerMagic starts every collective's header ("GPTC").
const headerMagic = 0x43545047

// A collective's header: magic, op, seq (uint64), the buffer's length (uint64),
// then the sender's shared buffer holding it (index uint32, 0: none; 4 bytes
// reserved; the offset in floats, uint64): with one, the chunks go by reference.
const headerBytes = 40

// How a step treats what it receives.
const (
	recvCopy   = iota // the chunk replaces buf's
	recvAdd           // buf += the chunk (incoming + own)
	recvAddAvg        // buf = (incoming + own) / world: the last step of an averaging reduce-scatter
)

// step is one step of a ring schedule: the segment this rank sends to the next
// rank and the one it receives from the previous (-1: none).
type step struct {
	send, recv int
	mode       int
}

// AllReduceSum implements train.Collectives: a ring reduce-scatter, then a ring
// all-gather. Every rank ends with the same bits.
func (c *Comm) AllReduceSum(ctx context.Context, buf []float32) error {
	return c.allReduce(ctx, buf, opAllReduceSum, recvAdd)
}

// AllReduceAvg implements train.Collectives: AllReduceSum divided by the world
// size (once, by the segment's owner, so the bits agree everywhere).
func (c *Comm) AllReduceAvg(ctx context.Context, buf []float32) error {
	return c.allReduce(ctx, buf, opAllReduceAvg, recvAddAvg)
}

func (c *Comm) allReduce(ctx context.Context, buf []float32, op uint32, last int) error {
	if c.world == 1 {
		return c.Err()
	}
	W := c.world
	steps := make([]step, 0, 2*(W-1))
	for j := range W - 1 {
		mode := recvAdd
		if j == W-2 {
			mode = last
		}
		steps = append(steps, step{send: c.mod(c.rank - j - 1), recv: c.mod(c.rank - j - 2), mode: mode})
	}
	for j := range W - 1 {
		steps = append(steps, step{send: c.mod(c.rank - j), recv: c.mod(c.rank - j - 1), mode: recvCopy})
	}
	return c.collective(ctx, op, buf, W, steps)
}

// ReduceScatterSum implements train.Collectives: len(buf) must be a multiple of
// the world size; afterwards rank r's part buf[r·n/W:(r+1)·n/W] holds the sum
// over the ranks of that part (the others hold partial sums).
func (c *Comm) ReduceScatterSum(ctx context.Context, buf []float32) error {
	if len(buf)%c.world != 0 {
		return fmt.Errorf("dist: reduce-scatter of %d floats over %d ranks: the length must be a multiple of the world size", len(buf), c.world)
	}
	if c.world == 1 {
		return c.Err()
	}
	W := c.world
	steps := make([]step, 0, W-1)
	for j := range W - 1 {
		steps = append(steps, step{send: c.mod(c.rank - j - 1), recv: c.mod(c.rank - j - 2), mode: recvAdd})
	}
	return c.collective(ctx, opReduceScatter, buf, W, steps)
}

// AllGather implements train.Collectives: len(buf) must be a multiple of the world
// size; rank r's part buf[r·n/W:(r+1)·n/W] is copied to every rank.
func (c *Comm) AllGather(ctx context.Context, buf []float32) error {
	if len(buf)%c.world != 0 {
		return fmt.Errorf("dist: all-gather of %d floats over %d ranks: the length must be a multiple of the world size", len(buf), c.world)
	}
	if c.world == 1 {
		return c.Err()
	}
	W := c.world
	steps := make([]step, 0, W-1)
	for j := range W - 1 {
		steps = append(steps, step{send: c.mod(c.rank - j), recv: c.mod(c.rank - j - 1), mode: recvCopy})
	}
	return c.collective(ctx, opAllGather, buf, W, steps)
}

// Broadcast implements train.Collectives: a pipelined chain along the ring from
// root (root sends, each rank forwards each chunk as it arrives, the rank before
// root only receives).
func (c *Comm) Broadcast(ctx context.Context, buf []float32, root int) error {
	if root < 0 || root >= c.world {
		return fmt.Errorf("dist: broadcast from rank %d in a world of %d", root, c.world)
	}
	if c.world == 1 {
		return c.Err()
	}
	var steps []step
	switch {
	case c.rank == root:
		steps = []step{{send: 0, recv: -1}}
	case c.mod(c.rank+1) == root:
		steps = []step{{send: -1, recv: 0, mode: recvCopy}}
	default:
		steps = []step{{send: -1, recv: 0, mode: recvCopy}, {send: 0, recv: -1}}
	}
	return c.collective(ctx, uint32(opBroadcast|root<<8), buf, 1, steps)
}

// Barrier implements train.Collectives: an all-reduce of one float per rank, which
// no rank can finish before every rank has started it.
func (c *Comm) Barrier(ctx context.Context) error {
	if c.world == 1 {
		return c.Err()
	}
	buf := make([]float32, c.world)
	W := c.world
	var steps []step
	for j := range W - 1 {
		steps = append(steps, step{send: c.mod(c.rank - j - 1), recv: c.mod(c.rank - j - 2), mode: recvAdd})
	}
	for j := range W - 1 {
		steps = append(steps, step{send: c.mod(c.rank - j), recv: c.mod(c.rank - j - 1), mode: recvCopy})
	}
	return c.collective(ctx, opBarrier, buf, W, steps)
}

func (c *Comm) mod(i int) int { return ((i % c.world) + c.world) % c.world }

// segment is [lo, hi) of segment s of n floats cut into parts.
func segment(n, parts, s int) (lo, hi int) {
	return int(int64(s) * int64(n) / int64(parts)), int(int64(s+1) * int64(n) / int64(parts))
}

// collective runs one collective's schedule: the header, then the steps, sending
// on a goroutine beside the receiving, chunk by chunk. A step's chunk is sent as
// soon as the previous step has received (and reduced) it. It watches the
// timeout and ctx, and turns any failure into an abort of the communicator.
func (c *Comm) collective(ctx context.Context, op uint32, buf []float32, parts int, steps []step) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Err(); err != nil {
		return err
	}
	seq := c.seq.Add(1)
	name := opName(op)

	// The watch: the timeout (reported to the store, which names the ranks that
	// did not arrive) and ctx, as callbacks, so that a collective that finishes
	// in time wakes no other goroutine.
	w := &collectiveWatch{}
	timer := afterFunc(c.timeout, func() { c.watchTimeout(w, seq, name) })
	stopCtx := context.AfterFunc(ctx, func() { c.watchCancel(ctx, w, seq, name) })
	err := c.run(op, seq, buf, parts, steps)
	w.settle(watchDone, watchRunning, watchLate)
	timer.Stop()
	stopCtx()
	if err == nil {
		return nil
	}
	if aerr := c.Err(); aerr != nil {
		return aerr
	}
	var pe protocolError
	if errors.As(err, &pe) {
		c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s): %w", c.rank, seq, name, err), true)
		return c.Err()
	}
	// A broken link: the store most likely knows which rank failed; give it a
	// moment to say so before reporting the link itself.
	select {
	case <-c.aborted:
	case <-time.After(c.grace):
		c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s): %w", c.rank, seq, name, err), true)
	}
	return c.Err()
}

// The states of a collective's watch (collectiveWatch.state). The collective's
// end, its timer and its context's end each settle it, and only the first
// acts: a timer or a context that ends as the collective completes neither
// reports it late nor aborts it.
const (
	watchRunning  = iota // the collective runs, and its deadline has not come
	watchDone            // the collective ended (completed, or failed on its own)
	watchLate            // its timer fired first: the timeout is reported
	watchAborting        // its context ended, or no verdict followed the report: the watch aborts
)

// collectiveWatch is the state of one collective's watch.
type collectiveWatch struct{ state atomic.Int32 }

// settle moves the watch to state to from one of the states from, and reports
// whether it did (false: the watch was in another state; something else
// settled the collective first).
func (w *collectiveWatch) settle(to int32, from ...int32) bool {
	for _, f := range from {
		if w.state.CompareAndSwap(f, to) {
			return true
		}
	}
	return false
}

// afterFunc starts a collective's timer (time.AfterFunc; a variable for the
// tests, which fire the timer themselves).
var afterFunc = time.AfterFunc

// collectiveTimerHook, if set (by tests), runs when a collective's timer has
// fired, before the timer settles the collective.
var collectiveTimerHook func(c *Comm)

// watchTimeout is a collective's timer: unless the collective has ended, it
// reports the timeout to the store (which names the ranks that did not
// arrive), and fails the group itself if no verdict comes within its grace (failGrace).
func (c *Comm) watchTimeout(w *collectiveWatch, seq int64, name string) {
	if collectiveTimerHook != nil {
		collectiveTimerHook(c)
	}
	if !w.settle(watchLate, watchRunning) {
		return
	}
	c.store.send(message{Type: msgTimeout, Seq: c.reportSeq(seq), Op: name, Reason: c.timeout.String()})
	select {
	case <-c.aborted:
	case <-time.After(c.grace):
		if w.settle(watchAborting, watchLate) {
			c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s) did not finish within %s", c.rank, seq, name, c.timeout), true)
		}
	}
}

// watchCancel is a collective's watch of ctx: unless the collective has ended,
// ctx's end aborts the communicator (and so the collective).
func (c *Comm) watchCancel(ctx context.Context, w *collectiveWatch, seq int64, name string) {
	if w.settle(watchAborting, watchRunning, watchLate) {
		c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s) cancelled: %w", c.rank, seq, name, context.Cause(ctx)), true)
	}
}

// run moves the data of one collective.
func (c *Comm) run(op uint32, seq int64, buf []float32, parts int, steps []step) error {
	n := len(buf)
	prevRank, nextRank := c.mod(c.rank-1), c.mod(c.rank+1)
	chunks := func(seg int) int {
		lo, hi := segment(n, parts, seg)
		return (hi - lo + c.chunk - 1) / c.chunk
	}
	// Two hand-offs between the goroutines, chunk by chunk:
	//   - ready: a chunk received in a step whose segment the next step sends;
	//   - sent: how many chunks have been written out, in order. Before a chunk is
	//     received into a segment sent earlier, that send must be done (it is, as
	//     the ring's causality guarantees, but the memory model wants it said).
	total := 0
	sendBefore := make([]int, len(steps)) // chunks sent before step t
	lastSendOf := map[int]int{}           // segment → the end (in chunks sent) of its last send so far
	overwrite := make([]int, len(steps))  // for step t's receive: the sent count its segment's last send ends at (0: none)
	for t, st := range steps {
		if st.recv >= 0 {
			overwrite[t] = lastSendOf[st.recv]
			if t+1 < len(steps) && steps[t+1].send == st.recv {
				total += chunks(st.recv)
			}
		}
		if t+1 < len(steps) {
			sendBefore[t+1] = sendBefore[t]
		}
		if st.send >= 0 {
			k := chunks(st.send)
			if t+1 < len(steps) {
				sendBefore[t+1] += k
			}
			lastSendOf[st.send] = sendBefore[t] + k
		}
	}
	x := &exchange{ready: make(chan struct{}, total), quit: make(chan struct{}), notify: make(chan struct{}, 1)}
	if ds, ok := c.out.(directSender); ok {
		if x.region, x.offset = ds.regionOf(buf); x.region != 0 {
			x.direct, x.base = ds, ds.position()+headerBytes
		}
	}
	out := c.newOutbound(op, seq, buf, parts, steps, x)
	if x.direct != nil {
		// Direct sends are tokens, which never wait on the next rank's progress: this
		// goroutine sends each chunk's token as soon as the chunk is ready, between
		// its receives, and no goroutine hands chunks over to another.
		var sendErr error
		x.post = func() error {
			out.released++
			if sendErr = out.pump(); sendErr != nil {
				return errors.New("sending failed")
			}
			return nil
		}
		if sendErr = out.header(); sendErr == nil {
			sendErr = out.pump()
		}
		var err error
		if sendErr == nil {
			err = c.recvSteps(op, seq, buf, parts, steps, x, sendBefore, overwrite)
		}
		if err == nil && sendErr == nil {
			sendErr = out.flush()
		}
		if sendErr != nil {
			return fmt.Errorf("send to rank %d: %w", nextRank, sendErr)
		}
		if err != nil {
			return fmt.Errorf("receive from rank %d: %w", prevRank, err)
		}
		return nil
	}
	x.post = func() error {
		x.ready <- struct{}{}
		return nil
	}
	sendErr := make(chan error, 1)
	if out.active {
		go func() {
			err := out.run()
			if err != nil && x.failFirst(failedSend) {
				// The collective has failed: the receiving half stops now rather
				// than wait for the previous rank's data, which may never come (the
				// ring stalls behind the broken link) before the collective timeout.
				c.in.halt()
			}
			sendErr <- err
		}()
	} else {
		sendErr <- nil
	}
	err := c.recvSteps(op, seq, buf, parts, steps, x, sendBefore, overwrite)
	if err != nil && x.failFirst(failedRecv) {
		// The collective has failed (the communicator aborts with it): the sender
		// stops now rather than wait for the next rank, which may not be reading
		// (busy before the collective, or failed itself).
		close(x.quit)
		c.out.halt()
		<-sendErr
		return fmt.Errorf("receive from rank %d: %w", prevRank, err)
	}
	// (A receive that failed after a send did was stopped by it: the send's
	// error is the account.)
	if err := <-sendErr; err != nil {
		return fmt.Errorf("send to rank %d: %w", nextRank, err)
	}
	return nil
}

// Which half of a collective failed first (exchange.failed): its error is the
// collective's, and it stops the other half.
const (
	failedSend = iota + 1
	failedRecv
)

// failFirst records that side (failedSend, failedRecv) failed, and reports
// whether it is the first to: only the first stops the other half.
func (x *exchange) failFirst(side int32) bool {
	return x.failed.CompareAndSwap(0, side)
}

// exchange is what a collective's sending and receiving halves share.
type exchange struct {
	ready  chan struct{} // one per chunk the sender may forward
	quit   chan struct{} // closed when receiving failed
	failed atomic.Int32  // the half that failed first (failedSend, failedRecv; 0: none)
	sent   atomic.Int64  // chunks written out
	notify chan struct{} // a nudge after each chunk written
	// post says that a chunk the next step sends has been received (and reduced).
	post func() error

	// Direct sends (buf is one of this rank's shared buffers): the chunks go as
	// tokens, the first at ring position base; region and offset locate buf.
	direct directSender
	region uint32
	offset uint64
	base   uint64
}

// sentOut waits until the first k chunks sent are out of this rank's hands: written
// (a copy went on the link), or, for direct sends, read by the next rank.
func (x *exchange) sentOut(k int64) error {
	if x.direct != nil {
		if x.sent.Load() < k {
			// (Sent inline, before this chunk's receive: the ring's causality.)
			return protocolError{fmt.Sprintf("a segment is overwritten before its chunk %d was sent", k)}
		}
		return x.direct.waitConsumed(x.base + uint64(k)*tokenBytes)
	}
	for x.sent.Load() < k {
		<-x.notify
	}
	return nil
}

// outbound is the sending half of a collective: its header, then the chunks of
// its send steps in order, each chunk of a segment received in the step before
// (gated) only once the receiving half has released it.
type outbound struct {
	c        *Comm
	x        *exchange
	buf      []float32
	op       uint32
	seq      int64
	active   bool // whether this rank sends in this collective (a header, at least)
	chunks   []outChunk
	next     int // the next chunk to send
	released int // gated chunks released and not yet sent (inline sending)
}

type outChunk struct {
	lo, hi int
	gated  bool
}

func (c *Comm) newOutbound(op uint32, seq int64, buf []float32, parts int, steps []step, x *exchange) *outbound {
	o := &outbound{c: c, x: x, buf: buf, op: op, seq: seq}
	for t, st := range steps {
		if st.send < 0 {
			continue
		}
		gated := t > 0 && steps[t-1].recv == st.send
		lo, hi := segment(len(buf), parts, st.send)
		for p := lo; p < hi; p += c.chunk {
			o.chunks = append(o.chunks, outChunk{lo: p, hi: min(hi, p+c.chunk), gated: gated})
		}
	}
	o.active = slices.ContainsFunc(steps, func(st step) bool { return st.send >= 0 })
	return o
}

func (o *outbound) header() error {
	if !o.active {
		return nil
	}
	var h [headerBytes]byte
	binary.LittleEndian.PutUint32(h[0:], headerMagic)
	binary.LittleEndian.PutUint32(h[4:], o.op)
	binary.LittleEndian.PutUint64(h[8:], uint64(o.seq))
	binary.LittleEndian.PutUint64(h[16:], uint64(len(o.buf)))
	binary.LittleEndian.PutUint32(h[24:], o.x.region)
	binary.LittleEndian.PutUint64(h[32:], o.x.offset)
	return o.c.out.send(h[:])
}

// send sends the next chunk: its token, or its data.
func (o *outbound) send() error {
	ch := o.chunks[o.next]
	var err error
	if o.x.direct != nil {
		err = o.x.direct.sendToken(uint64(o.next))
	} else {
		err = o.c.out.send(floatBytes(o.buf[ch.lo:ch.hi]))
	}
	if err != nil {
		return err
	}
	o.next++
	o.x.sent.Add(1)
	select {
	case o.x.notify <- struct{}{}:
	default:
	}
	return nil
}

// pump sends the chunks that may go now: the ungated, and as many gated as were
// released (inline sending).
func (o *outbound) pump() error {
	for o.next < len(o.chunks) && (!o.chunks[o.next].gated || o.released > 0) {
		if o.chunks[o.next].gated {
			o.released--
		}
		if err := o.send(); err != nil {
			return err
		}
	}
	return nil
}

// run sends the header and every chunk, waiting for the receiving half to release
// each gated one (a goroutine of its own; direct sends go inline instead).
func (o *outbound) run() error {
	if err := o.header(); err != nil {
		return err
	}
	for o.next < len(o.chunks) {
		if o.chunks[o.next].gated {
			select {
			case <-o.x.ready:
			case <-o.x.quit:
				return errors.New("receiving failed")
			}
		}
		if err := o.send(); err != nil {
			return err
		}
	}
	return nil
}

// flush waits, for direct sends, until the next rank has read every chunk: buf is
// the caller's again when the collective returns.
func (o *outbound) flush() error {
	if o.x.direct == nil {
		return nil
	}
	return o.x.direct.waitConsumed(o.x.direct.position())
}

func (c *Comm) recvSteps(op uint32, seq int64, buf []float32, parts int, steps []step, x *exchange, sendBefore, overwrite []int) error {
	receives := false
	for _, st := range steps {
		receives = receives || st.recv >= 0
	}
	if !receives {
		return nil
	}
	var h [headerBytes]byte
	if err := c.in.recv(h[:]); err != nil {
		return err
	}
	gotOp, gotSeq, gotN := binary.LittleEndian.Uint32(h[4:]), int64(binary.LittleEndian.Uint64(h[8:])), binary.LittleEndian.Uint64(h[16:])
	if binary.LittleEndian.Uint32(h[0:]) != headerMagic {
		return protocolError{"the ring stream is out of step (no collective header)"}
	}
	if gotOp != op || gotSeq != seq || gotN != uint64(len(buf)) {
		return protocolError{fmt.Sprintf("ranks disagree: the previous rank runs collective #%d (%s of %d floats), this rank #%d (%s of %d floats)",
			gotSeq, opName(gotOp), gotN, seq, opName(op), len(buf))}
	}
	// The previous rank's buffer, when it passes chunks by reference.
	var dr directReceiver
	var peer []float32
	if region := binary.LittleEndian.Uint32(h[24:]); region != 0 {
		var ok bool
		if dr, ok = c.in.(directReceiver); !ok {
			return protocolError{"the previous rank passes chunks by reference over a link without shared memory"}
		}
		var err error
		if peer, err = dr.peerRegion(region, binary.LittleEndian.Uint64(h[32:]), gotN); err != nil {
			return err
		}
	}
	var k uint64 // chunks received
	for t, st := range steps {
		if st.recv < 0 {
			continue
		}
		post := t+1 < len(steps) && steps[t+1].send == st.recv
		lo, hi := segment(len(buf), parts, st.recv)
		j := 0
		for p := lo; p < hi; p, j = p+c.chunk, j+1 {
			q := min(hi, p+c.chunk)
			dst := buf[p:q]
			if end := overwrite[t]; end > 0 {
				// This segment went out in an earlier step: its chunk j must be out of
				// this rank's hands before it is overwritten.
				if err := x.sentOut(int64(end - (hi-lo+c.chunk-1)/c.chunk + j + 1)); err != nil {
					return err
				}
			}
			var err error
			switch {
			case dr != nil:
				err = dr.recvDirect(k, dst, peer[p:q], st.mode, float32(c.world))
			case st.mode == recvCopy:
				err = c.in.recv(floatBytes(dst))
			case st.mode == recvAddAvg:
				err = c.in.recvAdd(dst, float32(c.world))
			default:
				err = c.in.recvAdd(dst, 0)
			}
			if err != nil {
				return err
			}
			k++
			if post {
				if err := x.post(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// floatBytes is the memory of f as bytes (the ring's wire format is the host's
// little-endian float32s; Init refuses big-endian hosts).
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*4)
}

// protocolError is a ring stream that does not match this rank's collective: a
// bug or mismatched command lines, not a failed peer, so no grace period.
type protocolError struct{ msg string }

func (e protocolError) Error() string { return e.msg }
