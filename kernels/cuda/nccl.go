package cuda

import (
	"context"
	"fmt"

	"gptkit/kernels"
)

// ncclLibs are the names NCCL is tried under.
var ncclLibs = []string{"libnccl.so.2", "libnccl.so"}

// UniqueID is NCCL's ncclUniqueId: rank 0 makes one (NewUniqueID) and hands it to
// every rank out of band (the distributed launcher's TCP store), each passes it
// to NewNCCL.
type UniqueID struct{ Internal [128]byte }

// ncclLib is the part of NCCL the collectives use (ncclResult_t is int32).
type ncclLib struct {
	lib          string
	getUniqueID  func(id *UniqueID) int32
	commInitRank func(comm *uintptr, nranks int32, id UniqueID, rank int32) int32
	commDestroy  func(comm uintptr) int32
	allReduce    func(send, recv uintptr, count uint64, dtype, op int32, comm, stream uintptr) int32
	broadcast    func(send, recv uintptr, count uint64, dtype, root int32, comm, stream uintptr) int32
	getVersion   func(v *int32) int32
}

const (
	ncclFloat32 = 7
	ncclSum     = 0
)

var ncclResultNames = map[int32]string{
	1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError", 4: "ncclInvalidArgument",
	5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
}

func ncclCheck(call string, r int32) error {
	if r == 0 {
		return nil
	}
	n, ok := ncclResultNames[r]
	if !ok {
		n = fmt.Sprintf("NCCL result %d", r)
	}
	return fmt.Errorf("cuda: %s: %s (NCCL_DEBUG=WARN says more)", call, n)
}

func loadNCCL(names []string) (*ncclLib, error) {
	h, name, err := openLib(names...)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: %v; install NCCL (e.g. the nvidia-nccl-cu12 wheel) and add its lib directory to LD_LIBRARY_PATH", ErrNoNCCL, err)
	}
	n := &ncclLib{lib: name}
	err = bindAll(h, name, []binding{
		{&n.getUniqueID, "ncclGetUniqueId"},
		{&n.commInitRank, "ncclCommInitRank"},
		{&n.commDestroy, "ncclCommDestroy"},
		{&n.allReduce, "ncclAllReduce"},
		{&n.broadcast, "ncclBroadcast"},
		{&n.getVersion, "ncclGetVersion"},
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// NewUniqueID makes the id of a new NCCL communicator (on rank 0). names nil
// means the standard sonames.
func NewUniqueID(names []string) (UniqueID, error) {
	var id UniqueID
	if names == nil {
		names = ncclLibs
	}
	n, err := loadNCCL(names)
	if err != nil {
		return id, err
	}
	return id, ncclCheck("ncclGetUniqueId", n.getUniqueID(&id))
}

// NCCL is the data-parallel collectives over NCCL, one process per GPU: it has
// the method set of train.Collectives (this package cannot import train), whose
// buffers are host memory (staged through device scratch: for the small
// buffers of the trainer's bookkeeping), and the same collectives on the
// backend's own tensors in place (AllReduceSumTensor, BroadcastTensor: the
// gradients and weights). NCCL's ring and tree all-reduces hand every rank the
// same reduced bytes, so the ranks' weights stay bit-identical, as
// train.Collectives demands.
type NCCL struct {
	b           *Backend
	n           *ncclLib
	comm        uintptr
	rank, world int
}

// NewNCCL joins rank of world ranks in the communicator id names (every rank
// calls it with the same id; it returns once all have). names nil means the
// standard sonames.
func NewNCCL(b *Backend, id UniqueID, rank, world int, names []string) (*NCCL, error) {
	if rank < 0 || rank >= world {
		return nil, fmt.Errorf("cuda: nccl rank %d outside a world of %d", rank, world)
	}
	if names == nil {
		names = ncclLibs
	}
	n, err := loadNCCL(names)
	if err != nil {
		return nil, err
	}
	c := &NCCL{b: b, n: n, rank: rank, world: world}
	b.enter()
	defer b.leave()
	if err := ncclCheck("ncclCommInitRank", n.commInitRank(&c.comm, int32(world), id, int32(rank))); err != nil {
		return nil, fmt.Errorf("%w (rank %d of %d)", err, rank, world)
	}
	return c, nil
}

// Rank implements train.Collectives.
func (c *NCCL) Rank() int { return c.rank }

// World implements train.Collectives.
func (c *NCCL) World() int { return c.world }

// staged runs a collective on host floats through device scratch.
func (c *NCCL) staged(buf []float32, run func(p uintptr) error) error {
	if len(buf) == 0 {
		return nil
	}
	t, err := c.b.Alloc("nccl staging", kernels.Float32, len(buf))
	if err != nil {
		return err
	}
	defer c.b.Free(t)
	c.b.Upload(t, kernels.Float32Bytes(buf))
	c.b.enter()
	err = run(t.Addr())
	c.b.leave()
	if err != nil {
		return err
	}
	c.b.Download(kernels.Float32Bytes(buf), t)
	return nil
}

// AllReduceSum implements train.Collectives (host floats, staged).
func (c *NCCL) AllReduceSum(ctx context.Context, buf []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.staged(buf, func(p uintptr) error { return c.allReduce(p, len(buf)) })
}

// Broadcast implements train.Collectives (host floats, staged).
func (c *NCCL) Broadcast(ctx context.Context, buf []float32, root int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if root < 0 || root >= c.world {
		return fmt.Errorf("cuda: nccl broadcast from rank %d in a world of %d", root, c.world)
	}
	return c.staged(buf, func(p uintptr) error { return c.broadcast(p, len(buf), root) })
}

// AllReduceSumTensor all-reduces a float32 tensor of the backend in place.
func (c *NCCL) AllReduceSumTensor(ctx context.Context, t kernels.Tensor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.tensor("all-reduce", t); err != nil || t.Len() == 0 {
		return err
	}
	c.b.enter()
	defer c.b.leave()
	return c.allReduce(t.Addr(), t.Len())
}

// BroadcastTensor broadcasts a float32 tensor of the backend from root in place.
func (c *NCCL) BroadcastTensor(ctx context.Context, t kernels.Tensor, root int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if root < 0 || root >= c.world {
		return fmt.Errorf("cuda: nccl broadcast from rank %d in a world of %d", root, c.world)
	}
	if err := c.tensor("broadcast", t); err != nil || t.Len() == 0 {
		return err
	}
	c.b.enter()
	defer c.b.leave()
	return c.broadcast(t.Addr(), t.Len(), root)
}

func (c *NCCL) tensor(op string, t kernels.Tensor) error {
	if t.Owner() != c.b || t.DType() != kernels.Float32 {
		return fmt.Errorf("cuda: nccl %s of %s: want a float32 tensor of this cuda backend", op, t)
	}
	return nil
}

// allReduce and broadcast run in the stream and wait for it. Called between
// enter and leave.
func (c *NCCL) allReduce(p uintptr, n int) error {
	if err := ncclCheck("ncclAllReduce", c.n.allReduce(p, p, uint64(n), ncclFloat32, ncclSum, c.comm, c.b.stream)); err != nil {
		return err
	}
	return cuCheck("cuStreamSynchronize", c.b.d.cuStreamSynchronize(c.b.stream))
}

func (c *NCCL) broadcast(p uintptr, n, root int) error {
	if err := ncclCheck("ncclBroadcast", c.n.broadcast(p, p, uint64(n), ncclFloat32, int32(root), c.comm, c.b.stream)); err != nil {
		return err
	}
	return cuCheck("cuStreamSynchronize", c.b.d.cuStreamSynchronize(c.b.stream))
}

func (c *NCCL) Barrier(ctx context.Context) error { return c.AllReduceSum(ctx, make([]float32, 1)) }

// Close destroys the communicator.
func (c *NCCL) Close() error {
	c.b.enter()
	defer c.b.leave()
	return ncclCheck("ncclCommDestroy", c.n.commDestroy(c.comm))
}
