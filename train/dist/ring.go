package dist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
	c.busy.Store(true)
	defer c.busy.Store(false)
	name := opName(op)

	// The watch: the timeout (reported to the store, which names the ranks that
	// did not arrive) and ctx.
	done := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		timer := time.NewTimer(c.timeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-c.aborted:
		case <-ctx.Done():
			c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s) cancelled: %w", c.rank, seq, name, context.Cause(ctx)), true)
		case <-timer.C:
			c.store.send(message{Type: msgTimeout, Seq: seq, Op: name, Reason: c.timeout.String()})
			select {
			case <-done:
			case <-c.aborted:
			case <-time.After(failGrace):
				c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s) did not finish within %s", c.rank, seq, name, c.timeout), true)
			}
		}
	}()
	err := c.run(op, seq, buf, parts, steps)
	close(done)
	<-watchDone
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
	case <-time.After(failGrace):
		c.abort(fmt.Errorf("dist: rank %d: collective #%d (%s): %w", c.rank, seq, name, err), true)
	}
	return c.Err()
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
	sendErr := make(chan error, 1)
	sends := false
	for _, st := range steps {
		sends = sends || st.send >= 0
	}
	if sends {
		go func() {
			sendErr <- c.sendSteps(op, seq, buf, parts, steps, x)
		}()
	} else {
		sendErr <- nil
	}
	err := c.recvSteps(op, seq, buf, parts, steps, x, sendBefore, overwrite)
	if err != nil {
		close(x.quit)
		<-sendErr
		return fmt.Errorf("receive from rank %d: %w", prevRank, err)
	}
	if err := <-sendErr; err != nil {
		return fmt.Errorf("send to rank %d: %w", nextRank, err)
	}
	return nil
}

// exchange is what a collective's sending and receiving goroutines share.
type exchange struct {
	ready  chan struct{} // one per chunk the sender may forward
	quit   chan struct{} // closed when receiving failed
	sent   atomic.Int64  // chunks written out
	notify chan struct{} // a nudge after each chunk written
}

func (c *Comm) sendSteps(op uint32, seq int64, buf []float32, parts int, steps []step, x *exchange) error {
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], headerMagic)
	binary.LittleEndian.PutUint32(h[4:], op)
	binary.LittleEndian.PutUint64(h[8:], uint64(seq))
	binary.LittleEndian.PutUint64(h[16:], uint64(len(buf)))
	if err := c.out.send(h[:]); err != nil {
		return err
	}
	for t, st := range steps {
		if st.send < 0 {
			continue
		}
		gated := t > 0 && steps[t-1].recv == st.send
		lo, hi := segment(len(buf), parts, st.send)
		for p := lo; p < hi; p += c.chunk {
			if gated {
				select {
				case <-x.ready:
				case <-x.quit:
					return errors.New("receiving failed")
				}
			}
			if err := c.out.send(floatBytes(buf[p:min(hi, p+c.chunk)])); err != nil {
				return err
			}
			x.sent.Add(1)
			select {
			case x.notify <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (c *Comm) recvSteps(op uint32, seq int64, buf []float32, parts int, steps []step, x *exchange, sendBefore, overwrite []int) error {
	receives := false
	for _, st := range steps {
		receives = receives || st.recv >= 0
	}
	if !receives {
		return nil
	}
	var h [24]byte
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
	for t, st := range steps {
		if st.recv < 0 {
			continue
		}
		post := t+1 < len(steps) && steps[t+1].send == st.recv
		lo, hi := segment(len(buf), parts, st.recv)
		k := 0
		for p := lo; p < hi; p, k = p+c.chunk, k+1 {
			q := min(hi, p+c.chunk)
			dst := buf[p:q]
			if end := overwrite[t]; end > 0 {
				// This segment went out in an earlier step: its chunk k must be sent
				// before it is overwritten.
				need := int64(end - (hi-lo+c.chunk-1)/c.chunk + k + 1)
				for x.sent.Load() < need {
					<-x.notify
				}
			}
			var err error
			switch st.mode {
			case recvCopy:
				err = c.in.recv(floatBytes(dst))
			case recvAddAvg:
				err = c.in.recvAdd(dst, float32(c.world))
			default:
				err = c.in.recvAdd(dst, 0)
			}
			if err != nil {
				return err
			}
			if post {
				x.ready <- struct{}{}
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

// add sets dst[i] = in[i] + dst[i]: the partial sum that came along the ring plus
// this rank's own value, always in that order.
func add(dst, in []float32) {
	in = in[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := in[i : i+4 : i+4]
		d[0] = s[0] + d[0]
		d[1] = s[1] + d[1]
		d[2] = s[2] + d[2]
		d[3] = s[3] + d[3]
	}
	for ; i < len(dst); i++ {
		dst[i] = in[i] + dst[i]
	}
}

// addDiv sets dst[i] = (in[i] + dst[i]) / w.
func addDiv(dst, in []float32, w float32) {
	in = in[:len(dst)]
	for i := range dst {
		dst[i] = (in[i] + dst[i]) / w
	}
}

// protocolError is a ring stream that does not match this rank's collective: a
// bug or mismatched command lines, not a failed peer, so no grace period.
type protocolError struct{ msg string }

func (e protocolError) Error() string { return e.msg }
