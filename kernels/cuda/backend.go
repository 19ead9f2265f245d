package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

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
}

// Backend is the CUDA kernels.Backend. Methods are safe for concurrent use (they
// serialize on one stream); the first failed CUDA call panics with an error that
// names it, as there is no way to continue after one.
type Backend struct {
	info    Info
	prec    string
	compute int32

	mu     sync.Mutex
	d      *driver
	blas   *cublas
	ctx    uintptr
	stream uintptr
	handle uintptr
	fns    map[string]uintptr
	params []uint64 // kernel parameter block in pinned host memory (see launch)
	mem    memory
}

var _ kernels.Backend = (*Backend)(nil)

// Probe reports whether a usable GPU is there and describes it, without creating
// a context: what --device auto asks.
func Probe(o Options) (Info, error) {
	_, info, err := initDevice(driverNames(o), o.Device)
	return info, err
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
// ErrNoCUBLAS and fit on one line.
func Open(o Options) (*Backend, error) {
	b := &Backend{prec: o.Precision}
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
	d, info, err := initDevice(driverNames(o), o.Device)
	if err != nil {
		return nil, err
	}
	b.d, b.info = d, info
	names := o.CUBLASLibs
	if names == nil {
		names = cublasLibs
	}
	if b.blas, err = loadCUBLAS(names); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var dev int32
	if err := cuCheck("cuDeviceGet", d.cuDeviceGet(&dev, int32(o.Device))); err != nil {
		return nil, err
	}
	if err := cuCheck("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&b.ctx, dev)); err != nil {
		return nil, err
	}
	if err := cuCheck("cuCtxSetCurrent", d.cuCtxSetCurrent(b.ctx)); err != nil {
		return nil, err
	}
	if err := cuCheck("cuStreamCreate", d.cuStreamCreate(&b.stream, 0)); err != nil {
		return nil, err
	}
	if b.fns, err = loadKernels(d, info.DriverVersion); err != nil {
		return nil, err
	}
	if err := cublasCheck("cublasCreate", b.blas.create(&b.handle)); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, b.blas.lib)
	}
	if err := cublasCheck("cublasSetStream", b.blas.setStream(b.handle, b.stream)); err != nil {
		return nil, err
	}
	if err := b.initParams(); err != nil {
		return nil, err
	}
	if err := b.initStaging(); err != nil {
		return nil, err
	}
	return b, nil
}

// Info describes the device.
func (b *Backend) Info() Info { return b.info }

// Name implements kernels.Backend.
func (b *Backend) Name() string {
	return fmt.Sprintf("cuda(%s, %s matmuls)", b.info.Name, b.prec)
}

// Sync implements kernels.Backend: it waits for every op issued so far.
func (b *Backend) Sync() {
	b.enter()
	defer b.leave()
	b.must(cuCheck("cuStreamSynchronize", b.d.cuStreamSynchronize(b.stream)))
}

// Close waits for the device, frees every buffer (tensors from Alloc must not be
// used after it) and releases the context.
func (b *Backend) Close() error {
	b.enter()
	defer b.leave()
	err := cuCheck("cuStreamSynchronize", b.d.cuStreamSynchronize(b.stream))
	err = errors.Join(err, b.mem.free(b.d))
	err = errors.Join(err, cublasCheck("cublasDestroy", b.blas.destroy(b.handle)))
	err = errors.Join(err, cuCheck("cuStreamDestroy", b.d.cuStreamDestroy(b.stream)))
	var dev int32
	b.d.cuDeviceGet(&dev, int32(b.info.Ordinal))
	err = errors.Join(err, cuCheck("cuDevicePrimaryCtxRelease", b.d.cuDevicePrimaryCtxRelease(dev)))
	return err
}

// enter takes the backend's lock and makes its context current on this OS thread
// (CUDA contexts are per thread; goroutines move between threads).
func (b *Backend) enter() {
	b.mu.Lock()
	runtime.LockOSThread()
	if b.d == nil {
		b.leave()
		panic("cuda: backend used without Open")
	}
	b.must(cuCheck("cuCtxSetCurrent", b.d.cuCtxSetCurrent(b.ctx)))
}

func (b *Backend) leave() {
	runtime.UnlockOSThread()
	b.mu.Unlock()
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
