package train

import (
	"context"
	"fmt"
	"math"

	"gptkit/kernels"
)

// Collectives is how the data-parallel ranks of a run talk. Every rank calls the
// same methods in the same order with buffers of the same lengths, and every
// buffer comes from the kernels backend's Alloc (a device backend reads it in
// place). Single is the one-process implementation; train/dist's Comm is the CPU
// one (a pipelined ring over TCP); kernels/cuda's NCCL communicator is the GPU
// one. FullCollectives adds the collectives of sharded optimizers; Full supplies
// them for an implementation that has only these.
//
// The trainer uses them so: rank 0's initial weights (and, on resume, its
// checkpoint) are broadcast; the gradients are all-reduced, bucket by bucket as
// the backward pass finishes them (or, with ZeRO-1, reduce-scattered and the
// updated weights all-gathered); the step's loss sums, the gradient norm's
// partial sums, the stop decision and the weight checksums are all-gathered; a
// checkpoint ends with a barrier.
type Collectives interface {
	// Rank is this process's rank in [0, World()).
	Rank() int
	// World is the number of ranks.
	World() int
	// AllReduceSum replaces buf on every rank with the elementwise sum over the ranks
	// of their buf. The result must be bit-identical on every rank (each element
	// summed in an order that does not depend on timing, once), so the ranks'
	// weights never drift apart.
	AllReduceSum(ctx context.Context, buf []float32) error
	// Broadcast replaces buf on every rank with root's, bit for bit.
	Broadcast(ctx context.Context, buf []float32, root int) error
	// Barrier returns once every rank has called it.
	Barrier(ctx context.Context) error
}

// SharedMemory is implemented by Collectives that move data faster between
// buffers they allocated (train/dist's Comm: a rank reads its same-host
// neighbour's buffer in place instead of receiving a copy). With a backend on
// host memory (kernels.HostMemory) the trainer takes the weights, the gradients
// and its small collective buffers from AllocShared, and returns them with
// FreeShared when it closes. AllocShared is not collective: each rank decides.
type SharedMemory interface {
	AllocShared(n int) []float32
	FreeShared(buf []float32)
}

// FullCollectives is Collectives with the rest of the usual set: the average, and
// the reduce-scatter and all-gather that ZeRO-1 is made of.
type FullCollectives interface {
	Collectives
	// AllReduceAvg is AllReduceSum divided by World(), with the same guarantee.
	AllReduceAvg(ctx context.Context, buf []float32) error
	// ReduceScatterSum: len(buf) is a multiple of World(); afterwards rank r's part
	// buf[r·n/W:(r+1)·n/W] holds the sum over the ranks of that part (bit-identical
	// to what any other rank would compute for it); the other parts are clobbered.
	ReduceScatterSum(ctx context.Context, buf []float32) error
	// AllGather: len(buf) is a multiple of World(); rank r's part
	// buf[r·n/W:(r+1)·n/W] is copied, bit for bit, to every rank.
	AllGather(ctx context.Context, buf []float32) error
}

// Full returns c's FullCollectives: c itself when it has them, else c with the
// missing ones made of its own (the average as a sum and a division, the
// reduce-scatter as an all-reduce, the all-gather as one broadcast per rank):
// correct, with more traffic.
func Full(c Collectives) FullCollectives {
	if f, ok := c.(FullCollectives); ok {
		return f
	}
	return emulated{c}
}

type emulated struct{ Collectives }

func (e emulated) AllReduceAvg(ctx context.Context, buf []float32) error {
	if err := e.AllReduceSum(ctx, buf); err != nil {
		return err
	}
	w := float32(e.World())
	for i := range buf {
		buf[i] /= w
	}
	return nil
}

func (e emulated) ReduceScatterSum(ctx context.Context, buf []float32) error {
	if len(buf)%e.World() != 0 {
		return fmt.Errorf("train: reduce-scatter of %d floats over %d ranks", len(buf), e.World())
	}
	return e.AllReduceSum(ctx, buf)
}

func (e emulated) AllGather(ctx context.Context, buf []float32) error {
	W := e.World()
	if len(buf)%W != 0 {
		return fmt.Errorf("train: all-gather of %d floats over %d ranks", len(buf), W)
	}
	part := len(buf) / W
	for r := range W {
		if err := e.Broadcast(ctx, buf[r*part:(r+1)*part], r); err != nil {
			return err
		}
	}
	return nil
}

// Single is the Collectives of a one-process run: rank 0 of 1, and every collective
// leaves buf as it is (and never fails: a cancelled context is noticed between steps).
type Single struct{}

var _ FullCollectives = Single{}

// Rank implements Collectives.
func (Single) Rank() int { return 0 }

// World implements Collectives.
func (Single) World() int { return 1 }

// AllReduceSum implements Collectives: the sum over one rank is buf itself.
func (Single) AllReduceSum(ctx context.Context, buf []float32) error { return nil }

// AllReduceAvg implements Collectives: the mean over one rank is buf itself.
func (Single) AllReduceAvg(ctx context.Context, buf []float32) error { return nil }

// Broadcast implements Collectives.
func (Single) Broadcast(ctx context.Context, buf []float32, root int) error {
	if root != 0 {
		return fmt.Errorf("train: broadcast from rank %d in a world of 1", root)
	}
	return nil
}

// Barrier implements Collectives.
func (Single) Barrier(ctx context.Context) error { return nil }

// ReduceScatterSum implements Collectives: rank 0 owns all of buf.
func (Single) ReduceScatterSum(ctx context.Context, buf []float32) error { return nil }

// AllGather implements Collectives: rank 0's part is all of buf.
func (Single) AllGather(ctx context.Context, buf []float32) error { return nil }

// Values that are not float32 gradients (float64 loss sums, counts, checksums)
// travel through the collectives as raw bits in float32 slots, through the
// collectives that only copy (AllGather, Broadcast): every rank then computes on
// the same exact values, in rank order.

// putBits stores the bits of x in two float32 slots.
func putBits(dst []float32, x float64) {
	b := math.Float64bits(x)
	dst[0] = math.Float32frombits(uint32(b))
	dst[1] = math.Float32frombits(uint32(b >> 32))
}

// getBits reads the float64 putBits stored.
func getBits(src []float32) float64 {
	return math.Float64frombits(uint64(math.Float32bits(src[0])) | uint64(math.Float32bits(src[1]))<<32)
}

// gather all-gathers k float64 values per rank: out[r*k+i] is rank r's vals[i].
func (t *Trainer) gather(ctx context.Context, vals ...float64) ([]float64, error) {
	W, k := t.coll.World(), len(vals)
	buf := t.scratch(2 * k * W)
	clear(buf)
	own := buf[2*k*t.coll.Rank():]
	for i, v := range vals {
		putBits(own[2*i:], v)
	}
	if err := t.coll.AllGather(ctx, buf); err != nil {
		return nil, err
	}
	out := make([]float64, k*W)
	for i := range out {
		out[i] = getBits(buf[2*i:])
	}
	return out, nil
}

// collectiveMemory is where the buffers the collectives work on come from. With
// a backend on host memory, the weights and gradients are host tensors the
// collectives read in place: the collectives' shared memory when they have it,
// else the backend's. A device backend's are its own, and the collectives work
// on host copies (stage). The returned host function gives the trainer's small
// host buffers for collectives (shared memory when there is some).
func collectiveMemory(be kernels.Backend, coll Collectives) (dev func(what string, n int) (kernels.Tensor, error), host func(n int) []float32, shared SharedMemory) {
	dev = func(what string, n int) (kernels.Tensor, error) { return be.Alloc(what, kernels.Float32, n) }
	host = func(n int) []float32 { return make([]float32, n) }
	if sm, ok := coll.(SharedMemory); ok && coll.World() > 1 {
		host = sm.AllocShared
		if _, onHost := be.(kernels.HostMemory); onHost {
			dev = func(_ string, n int) (kernels.Tensor, error) { return kernels.Host(sm.AllocShared(n)), nil }
		}
		return dev, host, sm
	}
	return dev, host, nil
}

// scratch returns a host buffer of n floats for collectives (shared memory when
// the collectives have it), reused across steps.
func (t *Trainer) scratch(n int) []float32 {
	if t.scratchBufs == nil {
		t.scratchBufs = map[int][]float32{}
	}
	b, ok := t.scratchBufs[n]
	if !ok {
		b = t.hostAlloc(n)
		t.scratchBufs[n] = b
	}
	return b
}

// TensorCollectives is implemented by Collectives that work on a device
// backend's Float32 tensors in place (kernels/cuda's NCCL, on the backend's
// stream): the weights and gradients then never pass through the host. The
// semantics are FullCollectives' on the tensor's elements.
type TensorCollectives interface {
	AllReduceSumTensor(ctx context.Context, x kernels.Tensor) error
	BroadcastTensor(ctx context.Context, x kernels.Tensor, root int) error
	ReduceScatterSumTensor(ctx context.Context, x kernels.Tensor) error
	AllGatherTensor(ctx context.Context, x kernels.Tensor) error
}

// collective names one of the collectives onTensor runs.
type collective int

const (
	allReduceSum collective = iota
	broadcastFrom0
	reduceScatterSum
	allGather
)

// onTensor runs op on the Float32 tensor x (a broadcast from rank 0): in place
// when the collectives take the backend's tensors, else on x's host memory or
// a host copy of it (staged).
func (t *Trainer) onTensor(ctx context.Context, op collective, x kernels.Tensor) error {
	if tc, ok := t.coll.(TensorCollectives); ok && !x.IsHost() {
		switch op {
		case allReduceSum:
			return tc.AllReduceSumTensor(ctx, x)
		case broadcastFrom0:
			return tc.BroadcastTensor(ctx, x, 0)
		case reduceScatterSum:
			return tc.ReduceScatterSumTensor(ctx, x)
		default:
			return tc.AllGatherTensor(ctx, x)
		}
	}
	buf, done := t.staged(x, true)
	var err error
	switch op {
	case allReduceSum:
		err = t.coll.AllReduceSum(ctx, buf)
	case broadcastFrom0:
		err = t.coll.Broadcast(ctx, buf, 0)
	case reduceScatterSum:
		err = t.coll.ReduceScatterSum(ctx, buf)
	default:
		err = t.coll.AllGather(ctx, buf)
	}
	if err == nil {
		done()
	}
	return err
}

// staged gives the collectives a Float32 tensor as host memory: the tensor's own
// memory when the host can address it, else a host copy (downloaded; the
// returned done uploads it back when the collective changed it).
func (t *Trainer) staged(x kernels.Tensor, changed bool) (buf []float32, done func()) {
	if x.IsHost() {
		return x.Float32s(), func() {}
	}
	buf = t.scratch(x.Len())
	t.be.Download(kernels.Float32Bytes(buf), x)
	return buf, func() {
		if changed {
			t.be.Upload(x, kernels.Float32Bytes(buf))
		}
	}
}
