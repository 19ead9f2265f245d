package cuda

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"gptkit/kernels"
)

// Precision of the matmuls (the only ops that use the tensor cores).
const (
	BF16 = "bf16" // operands rounded to bfloat16, float32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF)
	TF32 = "tf32" // operands rounded to TF32
	FP32 = "fp32" // plain float32, no tensor cores
)

// Options configure Open.
type Options struct {
	// Device is the GPU ordinal (after CUDA_VISIBLE_DEVICES); one process per GPU.
	Device int
	// Precision is BF16 (the default when empty), TF32 or FP32.
	Precision string

	// Library names to try; nil means the standard sonames. Tests point these at
	// names that do not exist to exercise the no-driver paths.
	DriverLibs, CUBLASLibs []string

	// Sim, when set, runs the backend on a simulated GPU (kernels/cuda/sim) with
	// simulated cuBLAS and NCCL instead of the libraries: --device cuda-sim.
	Sim *SimOptions

	// PTXDir, when set, is a folder of .ptx files that replace the embedded
	// modules of the same names (ptx.go); empty: $GPTKIT_PTX_DIR, if set.
	PTXDir string

	// Warn, when set, receives a line about something that works but slower
	// than it should (cuBLASLt refusing its epilogues, once). It is called with
	// the backend's lock held: it must not call the backend.
	Warn func(msg string)

	// wrapDriver, when set, wraps the driver Open uses (tests count its calls).
	wrapDriver func(driverAPI) driverAPI
}

// SimOptions describe the simulated GPU of Options.Sim.
type SimOptions struct {
	// Seed fixes the simulator's choices (block and warp order, atomics'
	// order, the errors of approximate math); 0 is a fine seed.
	Seed uint64
	// Memory is the device memory in bytes (default 16 GiB).
	Memory uint64
	// SMs is the number of multiprocessors reported (default 8); the
	// elementwise kernels launch 32 blocks per SM at most.
	SMs int
	// ExactApprox makes .approx instructions exact (correctly rounded).
	ExactApprox bool
	// RefuseEpilogues makes the simulated cuBLASLt refuse every epilogue as an
	// old one does (CUBLAS_STATUS_NOT_SUPPORTED before it runs), so the backend
	// takes its elementwise kernels instead.
	RefuseEpilogues bool
	// PatchPTX, when set, may change a module's PTX text before it is loaded
	// (tests: mutate one instruction and watch the suite fail).
	PatchPTX func(module string, ptx []byte) []byte
	// GPUs is how many GPUs the simulated machine has (default 1); Host names
	// the machine in their UUIDs (default: the host name); VisibleDevices, when
	// set, is CUDA_VISIBLE_DEVICES as the driver applies it (sim_devices.go).
	GPUs           int
	Host           string
	VisibleDevices *string
	// NoHazardCheck turns off the check of the streams' ordering (sim_streams.go:
	// an op touching memory another stream's unordered op writes is an error).
	NoHazardCheck bool
	// Trace, when set, receives a line per op queued on a stream (sim_streams.go).
	Trace io.Writer
}

// Backend is the CUDA kernels.Backend. Methods are safe for concurrent use (they
// serialize on one stream); the first failed CUDA call panics with an error that
// names it, as there is no way to continue after one.
type Backend struct {
	info    Info
	prec    string
	compute int32
	// halves has bit 1<<dt for each 16-bit dtype dt of the tensors allocated so
	// far: the GEMMs of such operands run on its tensor cores whatever prec says
	// (tryGemm), and Name says so.
	halves atomic.Uint32

	mu     sync.Mutex
	drv    driverAPI
	blas   blasAPI
	nccl   ncclAPI    // loaded on first use (NewNCCL, NewUniqueID)
	sim    *simDriver // the simulated GPU (cuda-sim); nil on a real one
	ctx    cuContext
	stream stream
	fns    map[string]function
	// ptxReplaced names the modules loaded from Options.PTXDir instead of the
	// embedded PTX ("attention.ptx from DIR"), for Name.
	ptxReplaced string
	args        []uint64  // launch's argument buffer
	prof        *profiler // set while Profile runs (profile.go)
	// profFLOPs is the FLOP count of the next launch, for a profile.
	profFLOPs float64
	mem       memory
	// noEpilogues: cuBLASLt refused an epilogue once; the elementwise kernels do
	// the bias and GELU from then on.
	noEpilogues bool
	warn        func(string) // Options.Warn, or nothing
}

var _ kernels.Backend = (*Backend)(nil)

// Probe reports whether a usable GPU is there and describes it, without creating
// a context: what --device auto asks.
func Probe(o Options) (Info, error) {
	drv, err := openDriver(o)
	if err != nil {
		return Info{}, err
	}
	return initDevice(drv, o.Device)
}

// openDriver returns the simulated driver (o.Sim) or loads libcuda.
func openDriver(o Options) (driverAPI, error) {
	if o.Sim != nil {
		return newSimDriver(*o.Sim), nil
	}
	return loadDriver(driverNames(o))
}

func driverNames(o Options) []string {
	if o.DriverLibs != nil {
		return o.DriverLibs
	}
	return driverLibs
}

// Open initializes device o.Device: the driver, a stream, cuBLAS and the kernels
// (JIT-compiled from the embedded PTX, a second or two the first time; the driver
// caches the result). Errors wrap ErrNoDriver, ErrNoDevice, ErrDriverTooOld or
// ErrNoCUBLAS and fit on one line. With o.Sim the device, cuBLAS and NCCL are
// simulated and the kernels' PTX runs on kernels/cuda/sim.
func Open(o Options) (_ *Backend, err error) {
	b := &Backend{prec: o.Precision, warn: o.Warn}
	switch o.Precision {
	case "", BF16:
		b.prec, b.compute = BF16, compute32F16B
	case TF32:
		b.compute = compute32FTF
	case FP32:
		b.compute = compute32F
	default:
		return nil, fmt.Errorf("cuda: precision %q: want bf16, tf32 or fp32", o.Precision)
	}
	if b.warn == nil {
		b.warn = func(string) {}
	}
	drv, err := openDriver(o)
	if err != nil {
		return nil, err
	}
	if o.Sim != nil {
		b.sim = drv.(*simDriver)
	}
	if o.wrapDriver != nil {
		drv = o.wrapDriver(drv)
	}
	b.drv = drv
	if b.info, err = initDevice(drv, o.Device); err != nil {
		return nil, err
	}
	var real *cublas
	if o.Sim != nil {
		b.blas = newSimBLAS(b.sim)
	} else {
		names := o.CUBLASLibs
		if names == nil {
			names = forDriver(cublasLibs, b.info.DriverVersion)
		}
		if real, err = loadCUBLAS(names); err != nil {
			return nil, err
		}
		// cuBLASLt's workspace is a block of the backend's memory: its cache is
		// released for it when the device is full, and MemoryUse counts it.
		real.workspace = func(n int) (devicePtr, error) { return b.allocBlock("the cuBLASLt workspace", n) }
		if o.CUBLASLibs == nil {
			// cuBLASLt of the same release as the cuBLAS that loaded.
			real.ltNames = []string{strings.Replace(real.lib, "libcublas.", "libcublasLt.", 1)}
		}
		b.blas = real
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if b.ctx, err = drv.primaryCtxRetain(o.Device); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// What Open made goes with the failure: the context's memory
			// stays held otherwise (--device auto then trains on the CPU
			// beside a GPU context of nothing).
			b.abandon(o.Device)
		}
	}()
	if err := drv.ctxSetCurrent(b.ctx); err != nil {
		return nil, err
	}
	if b.stream, err = drv.streamCreate(); err != nil {
		return nil, err
	}
	if b.sim != nil {
		b.sim.label(b.stream, "compute")
	}
	var patch func(string, []byte) []byte
	if o.Sim != nil {
		patch = o.Sim.PatchPTX
	}
	dir := o.PTXDir
	if dir == "" {
		dir = os.Getenv(ptxDirEnv)
	}
	if b.fns, b.ptxReplaced, err = loadKernels(drv, b.info.DriverVersion, dir, patch); err != nil {
		return nil, err
	}
	if real != nil {
		if err := cublasCheck("cublasCreate", real.create(&real.handle)); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, real.lib)
		}
	}
	if err := b.initStaging(); err != nil {
		return nil, err
	}
	return b, nil
}

// abandon undoes a failed Open after its context was retained (errors are
// dropped: Open's is the one to report).
func (b *Backend) abandon(device int) {
	_ = b.mem.free(b.drv)
	_ = b.blas.close()
	if b.stream != 0 {
		_ = b.drv.streamDestroy(b.stream)
	}
	_ = b.drv.primaryCtxRelease(device)
}

// Info describes the device.
func (b *Backend) Info() Info { return b.info }

// Name implements kernels.Backend: the device and the precision its matmuls run in,
// "cuda(NVIDIA H100 80GB HBM3, bf16 matmuls)". That is Options.Precision's for float32
// operands; a model in bfloat16 or float16 (once its tensors are allocated) runs its
// GEMMs on 16-bit operands, in bf16 or fp16 whatever the precision:
// "cuda(cuda-sim (simulated sm_80), bf16 matmuls, float32 ones in fp32)".
func (b *Backend) Name() string {
	return b.name(b.halves.Load())
}

// NameFor is Name as it will read once a model in dt is allocated: a trainer's
// pre-flight names the device before any tensor exists, when Name alone would give
// a bfloat16 run's GEMMs as Options.Precision's ("fp32 matmuls" on cuda-sim).
func (b *Backend) NameFor(dt kernels.DType) string {
	halves := b.halves.Load()
	if dt == kernels.BFloat16 || dt == kernels.Float16 {
		halves |= 1 << dt
	}
	return b.name(halves)
}

// name is Name with halves for the 16-bit dtypes allocated.
func (b *Backend) name(halves uint32) string {
	mm := b.matmuls(halves)
	if b.ptxReplaced != "" {
		return fmt.Sprintf("cuda(%s, %s, %s)", b.info.Name, mm, b.ptxReplaced)
	}
	return fmt.Sprintf("cuda(%s, %s)", b.info.Name, mm)
}

// matmuls names the precisions the GEMMs run in: of the 16-bit dtypes in mask
// (bit 1<<dt, as Backend.halves), then of float32 operands (Options.Precision)
// where that differs.
func (b *Backend) matmuls(mask uint32) string {
	var halves []string
	for _, h := range []struct {
		dt   kernels.DType
		prec string
	}{{kernels.BFloat16, BF16}, {kernels.Float16, "fp16"}} {
		if mask&(1<<h.dt) != 0 {
			halves = append(halves, h.prec)
		}
	}
	switch {
	case len(halves) == 0:
		return b.prec + " matmuls"
	case len(halves) == 1 && halves[0] == b.prec:
		return b.prec + " matmuls"
	}
	return strings.Join(halves, " and ") + " matmuls, float32 ones in " + b.prec
}

// DefaultDType is the compute dtype a trainer picks when told "auto": bfloat16
// on a GPU (llm.c's and PyTorch AMP's choice), float32 on the simulator, whose
// runs are meant to match --device cpu's.
func (b *Backend) DefaultDType() kernels.DType {
	if b.sim != nil {
		return kernels.Float32
	}
	return kernels.BFloat16
}

// Simulated reports whether the backend runs on the simulated GPU (cuda-sim).
func (b *Backend) Simulated() bool { return b.sim != nil }

// Sync implements kernels.Backend: it waits for every op issued so far.
func (b *Backend) Sync() {
	b.enter()
	defer b.leave()
	b.must(b.drv.streamSynchronize(b.stream))
}

// Close waits for the device, frees every buffer (tensors from Alloc must not be
// used after it) and releases the context.
func (b *Backend) Close() error {
	b.enter()
	defer b.leave()
	err := b.drv.streamSynchronize(b.stream)
	err = errors.Join(err, b.mem.free(b.drv))
	err = errors.Join(err, b.blas.close())
	err = errors.Join(err, b.drv.streamDestroy(b.stream))
	if d, ok := b.drv.(*driver); ok {
		err = errors.Join(err, d.freeParams())
	}
	err = errors.Join(err, b.drv.primaryCtxRelease(b.info.Ordinal))
	return err
}

// enter takes the backend's lock and makes its context current on this OS thread
// (CUDA contexts are per thread; goroutines move between threads).
func (b *Backend) enter() {
	b.mu.Lock()
	runtime.LockOSThread()
	if b.drv == nil {
		b.leave()
		panic("cuda: backend used without Open")
	}
	if err := b.drv.ctxSetCurrent(b.ctx); err != nil {
		b.leave() // before the panic: the caller's deferred leave is not set up yet
		panic(err)
	}
}

func (b *Backend) leave() {
	runtime.UnlockOSThread()
	b.mu.Unlock()
}

// withContext runs f with the backend's context current on this OS thread but
// without the backend's lock: for a call from another goroutine while the
// lock's holder waits (NCCL.Abort's ncclCommAbort). A thread with no context
// current would leave NCCL's teardown on the runtime's device 0: its
// cudaGetDevice, cudaSetDevice to the communicator's GPU and back, which since
// CUDA 12 creates a context on GPU 0 (or fails there, in exclusive-process
// mode) in every rank of another GPU.
func (b *Backend) withContext(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = b.drv.ctxSetCurrent(b.ctx) // (the abort goes on regardless)
	f()
}

// owned panics unless every given tensor is this backend's memory (a host
// tensor or another backend's cannot be addressed by its kernels).
func (b *Backend) owned(op string, ts ...kernels.Tensor) {
	for _, t := range ts {
		if !t.Nil() && t.Owner() != b {
			panic(fmt.Sprintf("kernels: %s: %s is not this cuda backend's memory (use its Alloc and Upload)", op, t))
		}
	}
}

// must panics on a CUDA error: after a failed launch or a sticky error the
// context is unusable, so there is nothing to return to.
func (b *Backend) must(err error) {
	if err != nil {
		panic(err)
	}
}

// LocalRank is the GPU ordinal for this process: $LOCAL_RANK (torchrun, our
// launcher) when set, else 0.
func LocalRank() int {
	if v, err := strconv.Atoi(os.Getenv("LOCAL_RANK")); err == nil && v >= 0 {
		return v
	}
	return 0
}
