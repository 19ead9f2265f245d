package cuda

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"gptkit/kernels/cuda/sim"
)

// simNCCL is the ncclAPI of the simulated GPU. Communicators whose ranks live in
// one process (one simulated GPU per rank, each driven by its own goroutine)
// meet through a table keyed by the unique id and reduce in rank order, so
// every rank receives the same bits. Ranks in different processes go through
// the Transport the trainer supplies (train/dist's communicator), set on the
// driver by NewNCCL. A collective is queued on the stream like a kernel and
// runs when the stream is synchronized, as NCCL's calls are asynchronous.
type simNCCL struct {
	d        *simDriver
	mu       sync.Mutex
	comms    map[uintptr]*simComm
	next     uintptr
	failNext bool // the next collective fails (SimNCCLError)
}

func newSimNCCL(d *simDriver) *simNCCL {
	return &simNCCL{d: d, comms: map[uintptr]*simComm{}, next: 1}
}

func (n *simNCCL) name() string { return "nccl-sim" }

// simIDMagic starts every simulated unique id (a real NCCL id is refused).
var simIDMagic = []byte("gptkit-sim-nccl\x00")

func (n *simNCCL) getUniqueID() (UniqueID, error) {
	var id UniqueID
	copy(id.Internal[:], simIDMagic)
	if _, err := rand.Read(id.Internal[len(simIDMagic):]); err != nil {
		return id, fmt.Errorf("cuda: ncclGetUniqueId: %w", err)
	}
	return id, nil
}

// simGroups are the in-process communicators, by id.
var simGroups = struct {
	sync.Mutex
	m map[UniqueID]*simGroup
}{m: map[UniqueID]*simGroup{}}

// simGroup is one in-process communicator's shared state.
type simGroup struct {
	nranks int
	mu     sync.Mutex
	cond   *sync.Cond
	joined []bool
	// the collective being gathered
	seq      uint64
	arrived  int
	calls    []simCall
	done     uint64 // collectives completed
	err      error
	failures int
}

// simCall is one rank's part of a collective.
type simCall struct {
	kind       string
	count      int
	dt         ncclDataType
	op         ncclRedOp
	root       int
	send, recv []byte
}

type simComm struct {
	rank, nranks int
	g            *simGroup // in-process
	t            Transport // across processes
	seq          uint64

	mu        sync.Mutex
	asyncErr  error         // what ncclCommGetAsyncError reports
	aborted   chan struct{} // closed by ncclCommAbort
	abortOnce sync.Once
}

func (n *simNCCL) commInitRank(nranks int, id UniqueID, rank int) (uintptr, error) {
	if !bytes.HasPrefix(id.Internal[:], simIDMagic) {
		return 0, fmt.Errorf("cuda: ncclCommInitRank: %s: the unique id was not made by the simulated NCCL (rank 0 must run cuda-sim too)", ncclResultNames[4])
	}
	if nranks < 1 || rank < 0 || rank >= nranks {
		return 0, fmt.Errorf("cuda: ncclCommInitRank: %s: rank %d of %d", ncclResultNames[4], rank, nranks)
	}
	c := &simComm{rank: rank, nranks: nranks, aborted: make(chan struct{})}
	if t := n.d.transport; t != nil {
		if t.World() != nranks || t.Rank() != rank {
			return 0, fmt.Errorf("cuda: ncclCommInitRank: rank %d of %d over a transport of rank %d of %d", rank, nranks, t.Rank(), t.World())
		}
		c.t = t
	} else {
		simGroups.Lock()
		g := simGroups.m[id]
		if g == nil {
			g = &simGroup{nranks: nranks, joined: make([]bool, nranks), calls: make([]simCall, nranks)}
			g.cond = sync.NewCond(&g.mu)
			simGroups.m[id] = g
		}
		simGroups.Unlock()
		g.mu.Lock()
		switch {
		case g.nranks != nranks:
			g.mu.Unlock()
			return 0, fmt.Errorf("cuda: ncclCommInitRank: %s: rank %d says %d ranks, the communicator has %d", ncclResultNames[5], rank, nranks, g.nranks)
		case g.joined[rank]:
			g.mu.Unlock()
			return 0, fmt.Errorf("cuda: ncclCommInitRank: %s: rank %d joined twice", ncclResultNames[5], rank)
		}
		g.joined[rank] = true
		g.cond.Broadcast()
		for !all(g.joined) { // as ncclCommInitRank, wait for every rank
			g.cond.Wait()
		}
		g.mu.Unlock()
		c.g = g
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.next
	n.next++
	n.comms[h] = c
	return h, nil
}

func all(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}

func (n *simNCCL) comm(call string, h uintptr) (*simComm, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.comms[h]
	if !ok {
		return nil, fmt.Errorf("cuda: %s: %s: communicator %#x", call, ncclResultNames[4], h)
	}
	return c, nil
}

func (n *simNCCL) commDestroy(h uintptr) error {
	if _, err := n.comm("ncclCommDestroy", h); err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.comms, h)
	n.mu.Unlock()
	return nil
}

func checkType(call string, dt ncclDataType, op ncclRedOp) error {
	switch dt {
	case ncclFloat32, ncclFloat16, ncclBfloat16, ncclFloat64, ncclInt32:
	default:
		return fmt.Errorf("cuda: %s: %s: data type %d is not simulated", call, ncclResultNames[4], dt)
	}
	switch op {
	case ncclSum, ncclMax, ncclMin, ncclAvg:
	default:
		return fmt.Errorf("cuda: %s: %s: reduction %d is not simulated", call, ncclResultNames[4], op)
	}
	return nil
}

// queue checks the buffers now and queues the collective on s.
func (n *simNCCL) queue(call string, h uintptr, s stream, cl simCall, sendN, recvN int, sendP, recvP devicePtr) error {
	c, err := n.comm(call, h)
	if err != nil {
		return err
	}
	if err := checkType(call, cl.dt, cl.op); err != nil {
		return err
	}
	if cl.send, err = n.d.devBytes(call+" (send buffer)", sendP, sendN*cl.dt.size()); err != nil {
		return err
	}
	if cl.recv, err = n.d.devBytes(call+" (receive buffer)", recvP, recvN*cl.dt.size()); err != nil {
		return err
	}
	cl.kind = call
	n.mu.Lock()
	fail := n.failNext
	n.failNext = false
	n.mu.Unlock()
	if fail {
		return n.d.enqueue(call, s, func() error { return c.failing(call) })
	}
	return n.d.enqueue(call, s, func() error { return c.run(cl) })
}

func (n *simNCCL) allReduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, h uintptr, s stream) error {
	return n.queue("ncclAllReduce", h, s, simCall{count: count, dt: dt, op: op}, count, count, send, recv)
}

func (n *simNCCL) broadcast(send, recv devicePtr, count int, dt ncclDataType, root int, h uintptr, s stream) error {
	c, err := n.comm("ncclBroadcast", h)
	if err != nil {
		return err
	}
	if root < 0 || root >= c.nranks {
		return fmt.Errorf("cuda: ncclBroadcast: %s: root %d of %d ranks", ncclResultNames[4], root, c.nranks)
	}
	sendN := count
	if c.rank != root {
		sendN = 0 // only the root's send buffer is read
	}
	return n.queue("ncclBroadcast", h, s, simCall{count: count, dt: dt, root: root}, sendN, count, send, recv)
}

func (n *simNCCL) reduceScatter(send, recv devicePtr, recvCount int, dt ncclDataType, op ncclRedOp, h uintptr, s stream) error {
	c, err := n.comm("ncclReduceScatter", h)
	if err != nil {
		return err
	}
	return n.queue("ncclReduceScatter", h, s, simCall{count: recvCount, dt: dt, op: op}, recvCount*c.nranks, recvCount, send, recv)
}

func (n *simNCCL) allGather(send, recv devicePtr, sendCount int, dt ncclDataType, h uintptr, s stream) error {
	c, err := n.comm("ncclAllGather", h)
	if err != nil {
		return err
	}
	return n.queue("ncclAllGather", h, s, simCall{count: sendCount, dt: dt}, sendCount, sendCount*c.nranks, send, recv)
}

// element access in the collectives' types
func getElem(b []byte, dt ncclDataType, i int) float64 {
	switch dt {
	case ncclFloat32:
		return float64(math.Float32frombits(le32(b[4*i:])))
	case ncclFloat64:
		return math.Float64frombits(uint64(le32(b[8*i:])) | uint64(le32(b[8*i+4:]))<<32)
	case ncclInt32:
		return float64(int32(le32(b[4*i:])))
	case ncclBfloat16:
		return float64(sim.FromBF16(uint16(b[2*i]) | uint16(b[2*i+1])<<8))
	case ncclFloat16:
		return float64(sim.FromF16(uint16(b[2*i]) | uint16(b[2*i+1])<<8))
	}
	return 0
}

func setElem(b []byte, dt ncclDataType, i int, v float64) {
	switch dt {
	case ncclFloat32:
		put32(b[4*i:], math.Float32bits(float32(v)))
	case ncclFloat64:
		u := math.Float64bits(v)
		put32(b[8*i:], uint32(u))
		put32(b[8*i+4:], uint32(u>>32))
	case ncclInt32:
		put32(b[4*i:], uint32(int32(v)))
	case ncclBfloat16:
		h := sim.ToBF16(float32(v))
		b[2*i], b[2*i+1] = byte(h), byte(h>>8)
	case ncclFloat16:
		h := sim.ToF16(float32(v))
		b[2*i], b[2*i+1] = byte(h), byte(h>>8)
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func put32(b []byte, u uint32) {
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// reduce combines the ranks' values of element i in rank order. Floating
// types accumulate in their own precision (float32 for f32, f16 and bf16
// rounded once at the end; float64 for f64), as a ring would.
func reduce(parts [][]byte, dt ncclDataType, op ncclRedOp, i int) float64 {
	acc := getElem(parts[0], dt, i)
	for r := 1; r < len(parts); r++ {
		v := getElem(parts[r], dt, i)
		switch op {
		case ncclSum, ncclAvg:
			if dt == ncclFloat64 || dt == ncclInt32 {
				acc += v
			} else {
				acc = float64(float32(acc) + float32(v))
			}
		case ncclMax:
			acc = math.Max(acc, v)
		case ncclMin:
			acc = math.Min(acc, v)
		}
	}
	if op == ncclAvg {
		if dt == ncclFloat64 {
			acc /= float64(len(parts))
		} else {
			acc = float64(float32(acc) / float32(len(parts)))
		}
	}
	return acc
}

// run performs this rank's part of a collective.
func (c *simComm) run(cl simCall) error {
	if c.t != nil {
		return c.runTransport(cl)
	}
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	seq := c.seq
	c.seq++
	for g.seq != seq && g.err == nil && !c.isAborted() { // an earlier collective still gathering
		g.cond.Wait()
	}
	if c.isAborted() {
		return nil // an aborted collective ends at once, its result undefined
	}
	if g.err != nil {
		return g.err
	}
	g.calls[c.rank] = cl
	g.arrived++
	if g.arrived == g.nranks {
		g.err = g.perform()
		g.arrived = 0
		g.done = seq + 1
		g.seq++
		g.cond.Broadcast()
	}
	for g.done <= seq && g.err == nil && !c.isAborted() {
		g.cond.Wait()
	}
	if c.isAborted() {
		return nil
	}
	return g.err
}

// perform runs the gathered collective (under g.mu, by the last rank to arrive).
func (g *simGroup) perform() error {
	first := g.calls[0]
	for r, cl := range g.calls {
		if cl.kind != first.kind || cl.count != first.count || cl.dt != first.dt || cl.op != first.op || cl.root != first.root {
			return fmt.Errorf("%s: %s: rank 0 called %s of %d (type %d, op %d, root %d), rank %d %s of %d (type %d, op %d, root %d): the ranks' collectives do not match",
				first.kind, ncclResultNames[5], first.kind, first.count, first.dt, first.op, first.root, r, cl.kind, cl.count, cl.dt, cl.op, cl.root)
		}
	}
	W, n, dt := g.nranks, first.count, first.dt
	sends := make([][]byte, W)
	for r := range g.calls {
		sends[r] = g.calls[r].send
	}
	switch first.kind {
	case "ncclAllReduce":
		out := make([]byte, n*dt.size())
		for i := 0; i < n; i++ {
			setElem(out, dt, i, reduce(sends, dt, first.op, i))
		}
		for _, cl := range g.calls {
			copy(cl.recv, out)
		}
	case "ncclBroadcast":
		out := append([]byte(nil), sends[first.root]...)
		for _, cl := range g.calls {
			copy(cl.recv, out)
		}
	case "ncclReduceScatter":
		outs := make([][]byte, W)
		for r := range outs {
			parts := make([][]byte, W)
			for q := range parts {
				parts[q] = sends[q][r*n*dt.size() : (r+1)*n*dt.size()]
			}
			outs[r] = make([]byte, n*dt.size())
			for i := 0; i < n; i++ {
				setElem(outs[r], dt, i, reduce(parts, dt, first.op, i))
			}
		}
		for r, cl := range g.calls {
			copy(cl.recv, outs[r])
		}
	case "ncclAllGather":
		out := make([]byte, 0, W*n*dt.size())
		for r := range sends {
			out = append(out, sends[r]...)
		}
		for _, cl := range g.calls {
			copy(cl.recv, out)
		}
	}
	return nil
}

// fullTransport is a Transport with train.FullCollectives' reduce-scatter and
// all-gather (train/dist's Comm has them).
type fullTransport interface {
	ReduceScatterSum(ctx context.Context, buf []float32) error
	AllGather(ctx context.Context, buf []float32) error
}

// runTransport performs a collective across processes: the values go through
// the transport as float32 (f16 and bf16 widened exactly, rounded back once).
func (c *simComm) runTransport(cl simCall) error {
	ctx := context.Background()
	W, n, dt := c.nranks, cl.count, cl.dt
	if dt == ncclFloat64 || dt == ncclInt32 {
		return fmt.Errorf("%s over processes: type %d is not simulated (float32, float16, bfloat16 are)", cl.kind, dt)
	}
	if cl.op == ncclMax || cl.op == ncclMin {
		return fmt.Errorf("%s over processes: only sum and average are simulated", cl.kind)
	}
	toF32 := func(b []byte, count int) []float32 {
		if dt == ncclFloat32 && count > 0 {
			out := make([]float32, count)
			copy(out, unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), count))
			return out
		}
		out := make([]float32, count)
		for i := range out {
			out[i] = float32(getElem(b, dt, i))
		}
		return out
	}
	fromF32 := func(dst []byte, x []float32) {
		for i, v := range x {
			setElem(dst, dt, i, float64(v))
		}
	}
	switch cl.kind {
	case "ncclAllReduce":
		buf := toF32(cl.send, n)
		if err := c.t.AllReduceSum(ctx, buf); err != nil {
			return err
		}
		if cl.op == ncclAvg {
			for i := range buf {
				buf[i] /= float32(W)
			}
		}
		fromF32(cl.recv, buf)
	case "ncclBroadcast":
		buf := make([]float32, n)
		if c.rank == cl.root {
			buf = toF32(cl.send, n)
		}
		if err := c.t.Broadcast(ctx, buf, cl.root); err != nil {
			return err
		}
		fromF32(cl.recv, buf)
	case "ncclReduceScatter":
		buf := toF32(cl.send, W*n)
		if ft, ok := c.t.(fullTransport); ok {
			if err := ft.ReduceScatterSum(ctx, buf); err != nil {
				return err
			}
		} else if err := c.t.AllReduceSum(ctx, buf); err != nil {
			return err
		}
		part := buf[c.rank*n : (c.rank+1)*n]
		if cl.op == ncclAvg {
			for i := range part {
				part[i] /= float32(W)
			}
		}
		fromF32(cl.recv, part)
	case "ncclAllGather":
		buf := make([]float32, W*n)
		copy(buf[c.rank*n:], toF32(cl.send, n))
		if ft, ok := c.t.(fullTransport); ok {
			if err := ft.AllGather(ctx, buf); err != nil {
				return err
			}
		} else {
			for r := 0; r < W; r++ {
				if err := c.t.Broadcast(ctx, buf[r*n:(r+1)*n], r); err != nil {
					return err
				}
			}
		}
		fromF32(cl.recv, buf)
	}
	return nil
}

var _ ncclAPI = (*simNCCL)(nil)
