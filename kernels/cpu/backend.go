// Package cpu is the fast CPU kernels.Backend: the ops of kernels.Backend with
// goroutine parallelism over rows, heads and output tiles on a small
// persistent worker pool, a packed and blocked GEMM (gemm.go) whose
// micro-kernel is amd64 assembly (AVX2/FMA, and AVX-512 where the CPU has it),
// and vector assembly for the transcendental-heavy loops. Every assembly
// routine has a pure-Go twin (the *_generic.go files, built off amd64 or with
// -tags noasm), and the same conformance suite (kernels/kerneltest) runs on
// both. The assembly is hand-written because Go does not vectorise loops.
//
// Determinism: results do not depend on the number of threads. A GEMM output
// element is computed by one micro-kernel per depth block in a fixed order;
// reductions over rows (bias, layernorm weight gradients, SumSquares) are
// split into chunks of fixed size combined in a fixed order; pool tasks never
// let the worker that runs them change what they compute. cpu_test.go checks
// bit-identical results for 1, 2, 3 and 7 threads. Results may differ in the
// last bits between the assembly and noasm builds, and (for ops using fast
// exp/tanh) from other backends within the conformance tolerances.
package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Backend is the CPU backend. Its methods are safe for concurrent use but run
// one op at a time (they share the worker pool and scratch memory).
type Backend struct {
	mu     sync.Mutex
	pool   *pool
	kernel *microKernel

	gemmScratch []gemmScratch // per worker
	packedB     []float32     // the shared packed B panel of the parallel GEMM
	work        [][]float32   // per-worker scratch for row and head tasks
	partial     []float32     // per-chunk partial sums of row reductions
	wide        [][]float32   // float32 copies of 16-bit operands, by slot (tensor.go)
}

var _ kernels.Backend = (*Backend)(nil)

// New returns a CPU backend running on threads goroutines (threads ≤ 0:
// runtime.GOMAXPROCS(0)).
func New(threads int) kernels.Backend {
	return newBackend(threads)
}

func newBackend(threads int) *Backend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	mk := selectKernel()
	be := &Backend{
		pool:        newPool(threads),
		kernel:      &mk,
		gemmScratch: make([]gemmScratch, threads),
		work:        make([][]float32, threads),
	}
	runtime.AddCleanup(be, func(p *pool) { p.close() }, be.pool)
	return be
}

// Name implements kernels.Backend, e.g. "cpu(avx512, 2 threads)".
func (be *Backend) Name() string {
	return fmt.Sprintf("cpu(%s, %d threads)", be.kernel.name, be.pool.threads)
}

// Alloc implements kernels.Backend: zeroed Go memory aligned to 64 bytes.
func (be *Backend) Alloc(what string, dt kernels.DType, n int) (kernels.Tensor, error) {
	if n < 0 {
		panic("kernels: alloc: negative size")
	}
	size := n * dt.Size()
	f := alignedFloats((size + 3) / 4)
	host := []byte{}
	if size > 0 {
		host = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), size)
	}
	buf := kernels.NewBuffer(be, uintptr(unsafe.Pointer(unsafe.SliceData(host))), host, size, what)
	return kernels.NewTensor(buf, dt, n), nil
}

// Free implements kernels.Backend: the garbage collector frees Go memory.
func (be *Backend) Free(kernels.Tensor) {}

// HostMemory implements kernels.HostMemory: any host memory will do (aligned
// memory is faster).
func (be *Backend) HostMemory() {}

// Upload implements kernels.Backend: a copy.
func (be *Backend) Upload(dst kernels.Tensor, src []byte) {
	check.Host("upload", dst)
	if len(src) != dst.Bytes() {
		panic(fmt.Sprintf("kernels: upload of %d bytes into %s", len(src), dst))
	}
	copy(dst.HostBytes(), src)
}

// Download implements kernels.Backend: a copy.
func (be *Backend) Download(dst []byte, src kernels.Tensor) {
	check.Host("download", src)
	if len(dst) != src.Bytes() {
		panic(fmt.Sprintf("kernels: download of %s into %d bytes", src, len(dst)))
	}
	copy(dst, src.HostBytes())
}

// Sync implements kernels.Backend: every op has finished when it returns.
func (be *Backend) Sync() {}

// alignedFloats returns n zeroed float32s starting on a 64-byte boundary.
func alignedFloats(n int) []float32 {
	buf := make([]float32, n+16)
	off := 0
	if r := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) % 64; r != 0 {
		off = int(64-r) / 4
	}
	return buf[off : off+n : off+n]
}

// workBuf returns worker w's scratch of at least n floats.
func (be *Backend) workBuf(w, n int) []float32 {
	if len(be.work[w]) < n {
		be.work[w] = alignedFloats(n)
	}
	return be.work[w][:n]
}

// partials returns the shared partial-sum buffer of at least n floats.
func (be *Backend) partials(n int) []float32 {
	if len(be.partial) < n {
		be.partial = alignedFloats(n)
	}
	return be.partial[:n]
}

// forChunks calls fn(lo, hi) over [0, n) in chunks of grain elements, in
// parallel. Chunk boundaries depend only on n and grain.
func (be *Backend) forChunks(n, grain int, fn func(lo, hi int)) {
	be.pool.run(ceilDiv(n, grain), func(_, t int) {
		fn(t*grain, min(n, (t+1)*grain))
	})
}

// elementGrain is the chunk size of elementwise ops: large enough that a
// chunk outweighs a pool hand-off.
const elementGrain = 1 << 15
