package cuda

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gptkit/kernels"
)

// ncclLibs are the names NCCL is tried under.
var ncclLibs = []string{"libnccl.so.2", "libnccl.so"}

// UniqueID is NCCL's ncclUniqueId: rank 0 makes one (Backend.NewUniqueID) and
// hands it to every rank out of band (the rendezvous store), each passes it to
// NewNCCL.
type UniqueID struct{ Internal [128]byte }

// ncclLib is the real NCCL, loaded at run time (ncclResult_t is int32).
type ncclLib struct {
	lib             string
	version         string // "2.21.5"
	getUniqueIDFn   func(id *UniqueID) int32
	commInitRankFn  func(comm *uintptr, nranks int32, id UniqueID, rank int32) int32
	commDestroyFn   func(comm uintptr) int32
	allReduceFn     func(send, recv uintptr, count uint64, dtype, op int32, comm, stream uintptr) int32
	broadcastFn     func(send, recv uintptr, count uint64, dtype, root int32, comm, stream uintptr) int32
	reduceFn        func(send, recv uintptr, count uint64, dtype, op, root int32, comm, stream uintptr) int32
	reduceScatterFn func(send, recv uintptr, recvcount uint64, dtype, op int32, comm, stream uintptr) int32
	allGatherFn     func(send, recv uintptr, sendcount uint64, dtype int32, comm, stream uintptr) int32
	getVersion      func(v *int32) int32
	asyncErrorFn    func(comm uintptr, result *int32) int32
	abortFn         func(comm uintptr) int32
}

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
	if names == nil {
		names = ncclLibs
	}
	h, name, err := openLib(names...)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: %v; install NCCL (e.g. the nvidia-nccl-cu12 wheel) and add its lib directory to LD_LIBRARY_PATH", ErrNoNCCL, err)
	}
	n := &ncclLib{lib: name}
	err = bindAll(h, name, []binding{
		{&n.getUniqueIDFn, "ncclGetUniqueId"},
		{&n.commInitRankFn, "ncclCommInitRank"},
		{&n.commDestroyFn, "ncclCommDestroy"},
		{&n.allReduceFn, "ncclAllReduce"},
		{&n.broadcastFn, "ncclBroadcast"},
		{&n.reduceFn, "ncclReduce"},
		{&n.reduceScatterFn, "ncclReduceScatter"},
		{&n.allGatherFn, "ncclAllGather"},
		{&n.getVersion, "ncclGetVersion"},
		{&n.asyncErrorFn, "ncclCommGetAsyncError"},
		{&n.abortFn, "ncclCommAbort"},
	})
	if err != nil {
		return nil, err
	}
	var code int32
	if err := ncclCheck("ncclGetVersion", n.getVersion(&code)); err != nil {
		return nil, err
	}
	if n.version, err = ncclVersion(code); err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", name, err)
	}
	return n, nil
}

// minNCCLVersion is the oldest NCCL the trainer can use: 2.10 brought bfloat16
// (ncclBfloat16) and ncclAvg.
const minNCCLVersion = 21000

// ncclVersion spells ncclGetVersion's code ("2.21.5": major·10000 + minor·100 +
// patch since NCCL 2.9, major·1000 + minor·100 + patch before), refusing an NCCL
// older than minNCCLVersion: it would fail only at the first bfloat16 collective.
func ncclVersion(code int32) (string, error) {
	var v string
	if code >= 10000 {
		v = fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	} else {
		v = fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	if code < minNCCLVersion {
		return v, fmt.Errorf("NCCL %s is older than 2.10, which the trainer needs (bfloat16 collectives); install a newer NCCL (e.g. the nvidia-nccl-cu12 wheel) and put its lib directory on LD_LIBRARY_PATH", v)
	}
	return v, nil
}

func (n *ncclLib) name() string { return n.lib + " (NCCL " + n.version + ")" }

func (n *ncclLib) getUniqueID() (UniqueID, error) {
	var id UniqueID
	return id, ncclCheck("ncclGetUniqueId", n.getUniqueIDFn(&id))
}

func (n *ncclLib) commInitRank(nranks int, id UniqueID, rank int) (uintptr, error) {
	var c uintptr
	return c, ncclCheck("ncclCommInitRank", n.commInitRankFn(&c, int32(nranks), id, int32(rank)))
}

func (n *ncclLib) commDestroy(c uintptr) error {
	return ncclCheck("ncclCommDestroy", n.commDestroyFn(c))
}

func (n *ncclLib) allReduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, c uintptr, s stream) error {
	return ncclCheck("ncclAllReduce", n.allReduceFn(send, recv, uint64(count), int32(dt), int32(op), c, uintptr(s)))
}

func (n *ncclLib) broadcast(send, recv devicePtr, count int, dt ncclDataType, root int, c uintptr, s stream) error {
	return ncclCheck("ncclBroadcast", n.broadcastFn(send, recv, uint64(count), int32(dt), int32(root), c, uintptr(s)))
}

func (n *ncclLib) reduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, root int, c uintptr, s stream) error {
	return ncclCheck("ncclReduce", n.reduceFn(send, recv, uint64(count), int32(dt), int32(op), int32(root), c, uintptr(s)))
}

func (n *ncclLib) reduceScatter(send, recv devicePtr, recvCount int, dt ncclDataType, op ncclRedOp, c uintptr, s stream) error {
	return ncclCheck("ncclReduceScatter", n.reduceScatterFn(send, recv, uint64(recvCount), int32(dt), int32(op), c, uintptr(s)))
}

func (n *ncclLib) allGather(send, recv devicePtr, sendCount int, dt ncclDataType, c uintptr, s stream) error {
	return ncclCheck("ncclAllGather", n.allGatherFn(send, recv, uint64(sendCount), int32(dt), c, uintptr(s)))
}

var _ ncclAPI = (*ncclLib)(nil)

// NewUniqueID makes the id of a new NCCL communicator (on rank 0) with the
// real NCCL; names nil means the standard sonames. Backend.NewUniqueID uses the
// backend's own NCCL (the simulated one on cuda-sim).
func NewUniqueID(names []string) (UniqueID, error) {
	n, err := loadNCCL(names)
	if err != nil {
		return UniqueID{}, err
	}
	return n.getUniqueID()
}

// NewUniqueID makes the id of a new communicator with the backend's NCCL
// (rank 0 calls it and passes the id to the others).
func (b *Backend) NewUniqueID() (UniqueID, error) {
	n, err := b.ncclLib()
	if err != nil {
		return UniqueID{}, err
	}
	// With the backend's context current: NCCL's bootstrap may touch the CUDA
	// runtime, which would otherwise pick device 0.
	var id UniqueID
	b.withContext(func() { id, err = n.getUniqueID() })
	return id, err
}

// NCCLOptions configure NewNCCL.
type NCCLOptions struct {
	// Libs are the NCCL library names to try; nil means the standard sonames
	// (the real backend only).
	Libs []string
	// Transport carries the simulated NCCL's collectives between processes
	// (cuda-sim only): the trainer's data-parallel communicator. Without it the
	// simulated ranks must live in this process.
	Transport Transport
	// Timeout is each collective's deadline (--collective-timeout; 0:
	// DefaultCollectiveTimeout); Watch, when set, is told of each collective
	// (nccl_watch.go).
	Timeout time.Duration
	Watch   CollectiveWatch
}

// Transport is what the simulated NCCL needs of a communicator between
// processes (train/dist's Comm has these methods; kernels cannot import it).
type Transport interface {
	Rank() int
	World() int
	AllReduceSum(ctx context.Context, buf []float32) error
	Broadcast(ctx context.Context, buf []float32, root int) error
}

// NCCL is the data-parallel collectives over NCCL, one process per GPU: it has
// the method set of train.FullCollectives (this package cannot import train)
// and train.TensorCollectives. The FullCollectives methods take host slices and
// stage them through device scratch; the *Tensor methods work on the backend's
// float32 tensors in place, which is what the trainer uses for the weights and
// gradients.
// NCCL's ring and tree all-reduces hand every rank the same reduced bytes, so the
// ranks' weights stay bit-identical, as train.Collectives demands.
type NCCL struct {
	b           *Backend
	n           ncclAPI
	comm        uintptr
	rank, world int
	w           watchdog   // deadlines, health, abort (nccl_watch.go)
	async       asyncState // the communication stream (nccl_async.go)
}

// NewNCCL joins rank of world ranks in the communicator id names (every rank
// calls it with the same id; it returns once all have).
func NewNCCL(b *Backend, id UniqueID, rank, world int, o NCCLOptions) (*NCCL, error) {
	if rank < 0 || rank >= world {
		return nil, fmt.Errorf("cuda: nccl rank %d outside a world of %d", rank, world)
	}
	if o.Libs != nil && b.sim == nil {
		n, err := loadNCCL(o.Libs)
		if err != nil {
			return nil, err
		}
		b.nccl = n
	}
	if o.Transport != nil {
		if b.sim == nil {
			return nil, fmt.Errorf("cuda: an NCCL transport is for the simulated GPU (cuda-sim); the real NCCL brings its own")
		}
		if o.Transport.Rank() != rank || o.Transport.World() != world {
			return nil, fmt.Errorf("cuda: nccl rank %d of %d over a transport of rank %d of %d", rank, world, o.Transport.Rank(), o.Transport.World())
		}
		b.sim.transport = o.Transport
	}
	n, err := b.ncclLib()
	if err != nil {
		return nil, err
	}
	c := &NCCL{b: b, n: n, rank: rank, world: world}
	b.enter()
	defer b.leave()
	if c.comm, err = n.commInitRank(world, id, rank); err != nil {
		return nil, ncclInitHint(fmt.Errorf("%w (rank %d of %d)", err, rank, world), n.name(), b.info.DriverVersion)
	}
	if err := c.initWatch(o); err != nil {
		n.commDestroy(c.comm) // not left behind with its GPU memory and peers' connections
		return nil, err
	}
	return c, nil
}

// ncclInitHint adds the likeliest cause to a CUDA error of ncclCommInitRank: an NCCL
// built for a newer CUDA than the driver runs (the nvidia-nccl-cu13 wheel under a
// CUDA 12 driver fails there, and NCCL cannot say which CUDA it was built for).
func ncclInitHint(err error, lib string, driverVersion int) error {
	if !strings.Contains(err.Error(), ncclResultNames[1]) || driverVersion <= 0 {
		return err
	}
	major := driverVersion / 1000
	return fmt.Errorf("%w\n---> HINT: %s may be built for a newer CUDA than the driver's %d.%d (NCCL_DEBUG=WARN names the CUDA error): install the NCCL of this CUDA major (pip install nvidia-nccl-cu%d) and put its lib directory first on LD_LIBRARY_PATH, or update the driver",
		err, lib, major, driverVersion%1000/10, major)
}

// Library names the NCCL the communicator runs on: the library's file and its
// version, or the simulated NCCL.
func (c *NCCL) Library() string { return c.n.name() }

// ncclLib returns the backend's NCCL, loading the real one on first use.
func (b *Backend) ncclLib() (ncclAPI, error) {
	if b.nccl != nil {
		return b.nccl, nil
	}
	if b.sim != nil {
		b.nccl = newSimNCCL(b.sim)
		return b.nccl, nil
	}
	n, err := loadNCCL(nil)
	if err != nil {
		return nil, err
	}
	b.nccl = n
	return n, nil
}

// Rank implements train.Collectives.
func (c *NCCL) Rank() int { return c.rank }

// World implements train.Collectives.
func (c *NCCL) World() int { return c.world }

// collective runs one NCCL call on host floats, through device scratch: up,
// the call on the backend's stream (watched), down.
func (c *NCCL) collective(ctx context.Context, op string, buf []float32, call func(p uintptr) error) error {
	if err := ctx.Err(); err != nil || len(buf) == 0 {
		return err
	}
	select {
	case <-c.w.abortCh: // the communicator's error, not the lost context's
		return c.w.abortErr
	default:
	}
	t, err := c.b.Alloc("nccl staging", kernels.Float32, len(buf))
	if err != nil {
		return err
	}
	c.b.Upload(t, kernels.Float32Bytes(buf))
	if err := c.tensorCollective(ctx, op, t, func(p uintptr, _ ncclDataType) error { return call(p) }); err != nil {
		return err // the scratch stays: after a failed collective the context is lost
	}
	c.b.Download(kernels.Float32Bytes(buf), t)
	c.b.Free(t)
	return nil
}

// tensorCollective runs one NCCL call on a tensor of the backend (float32,
// bfloat16 or float16: NCCL's type dt), in place, on the backend's stream, and
// waits for it, watched (nccl_watch.go).
func (c *NCCL) tensorCollective(ctx context.Context, op string, t kernels.Tensor, call func(p uintptr, dt ncclDataType) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dt, err := c.tensorType(op, t)
	if err != nil || t.Len() == 0 {
		return err
	}
	return c.run(ctx, op, func() error { return call(t.Addr(), dt) })
}

// AllReduceSumTensor is AllReduceSum on a tensor of the backend, in place.
func (c *NCCL) AllReduceSumTensor(ctx context.Context, t kernels.Tensor) error {
	return c.tensorCollective(ctx, "all-reduce", t, func(p uintptr, dt ncclDataType) error {
		return c.n.allReduce(p, p, t.Len(), dt, ncclSum, c.comm, c.b.stream)
	})
}

// BroadcastTensor is Broadcast on a tensor of the backend, in place.
func (c *NCCL) BroadcastTensor(ctx context.Context, t kernels.Tensor, root int) error {
	if root < 0 || root >= c.world {
		return fmt.Errorf("cuda: nccl broadcast from rank %d in a world of %d", root, c.world)
	}
	return c.tensorCollective(ctx, "broadcast", t, func(p uintptr, dt ncclDataType) error {
		return c.n.broadcast(p, p, t.Len(), dt, root, c.comm, c.b.stream)
	})
}

// ReduceScatterSumTensor is ReduceScatterSum on a tensor of the backend.
func (c *NCCL) ReduceScatterSumTensor(ctx context.Context, t kernels.Tensor) error {
	if t.Len()%c.world != 0 {
		return fmt.Errorf("cuda: nccl reduce-scatter of %d elements over %d ranks", t.Len(), c.world)
	}
	part := t.Len() / c.world
	return c.tensorCollective(ctx, "reduce-scatter", t, func(p uintptr, dt ncclDataType) error {
		return c.n.reduceScatter(p, p+uintptr(t.DType().Size()*part*c.rank), part, dt, ncclSum, c.comm, c.b.stream)
	})
}

// AllGatherTensor is AllGather on a tensor of the backend: float32 master
// weights, or the bfloat16 (float16) compute copy of them, half the bytes.
func (c *NCCL) AllGatherTensor(ctx context.Context, t kernels.Tensor) error {
	if t.Len()%c.world != 0 {
		return fmt.Errorf("cuda: nccl all-gather of %d elements over %d ranks", t.Len(), c.world)
	}
	part := t.Len() / c.world
	return c.tensorCollective(ctx, "all-gather", t, func(p uintptr, dt ncclDataType) error {
		return c.n.allGather(p+uintptr(t.DType().Size()*part*c.rank), p, part, dt, c.comm, c.b.stream)
	})
}

// AllReduceSum implements train.Collectives, in place, then waits for it.
func (c *NCCL) AllReduceSum(ctx context.Context, buf []float32) error {
	return c.collective(ctx, "all-reduce", buf, func(p uintptr) error {
		return c.n.allReduce(p, p, len(buf), ncclFloat32, ncclSum, c.comm, c.b.stream)
	})
}

// AllReduceAvg implements train.FullCollectives (NCCL's ncclAvg).
func (c *NCCL) AllReduceAvg(ctx context.Context, buf []float32) error {
	return c.collective(ctx, "all-reduce", buf, func(p uintptr) error {
		return c.n.allReduce(p, p, len(buf), ncclFloat32, ncclAvg, c.comm, c.b.stream)
	})
}

// Broadcast implements train.Collectives.
func (c *NCCL) Broadcast(ctx context.Context, buf []float32, root int) error {
	if root < 0 || root >= c.world {
		return fmt.Errorf("cuda: nccl broadcast from rank %d in a world of %d", root, c.world)
	}
	return c.collective(ctx, "broadcast", buf, func(p uintptr) error {
		return c.n.broadcast(p, p, len(buf), ncclFloat32, root, c.comm, c.b.stream)
	})
}

// ReduceScatterSum implements train.FullCollectives: rank r's part of buf
// receives the sum of that part over the ranks (NCCL's in-place form: the
// receive buffer is the rank's own part).
func (c *NCCL) ReduceScatterSum(ctx context.Context, buf []float32) error {
	if len(buf)%c.world != 0 {
		return fmt.Errorf("cuda: nccl reduce-scatter of %d floats over %d ranks", len(buf), c.world)
	}
	part := len(buf) / c.world
	return c.collective(ctx, "reduce-scatter", buf, func(p uintptr) error {
		return c.n.reduceScatter(p, p+uintptr(4*part*c.rank), part, ncclFloat32, ncclSum, c.comm, c.b.stream)
	})
}

// AllGather implements train.FullCollectives: rank r's part is copied to every
// rank (NCCL's in-place form: the send buffer is the rank's own part).
func (c *NCCL) AllGather(ctx context.Context, buf []float32) error {
	if len(buf)%c.world != 0 {
		return fmt.Errorf("cuda: nccl all-gather of %d floats over %d ranks", len(buf), c.world)
	}
	part := len(buf) / c.world
	return c.collective(ctx, "all-gather", buf, func(p uintptr) error {
		return c.n.allGather(p+uintptr(4*part*c.rank), p, part, ncclFloat32, c.comm, c.b.stream)
	})
}

// Barrier implements train.Collectives: an all-reduce of one float.
func (c *NCCL) Barrier(ctx context.Context) error { return c.AllReduceSum(ctx, make([]float32, 1)) }

// Close destroys the communicator (an aborted one is gone already).
func (c *NCCL) Close() error { return c.destroy() }
