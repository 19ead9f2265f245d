package cuda

import (
	"fmt"
	"unsafe"
)

// cublasLibs are the cuBLAS sonames tried, newest first.
var cublasLibs = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}

// cublas is the part of cuBLAS the backend uses (cublasStatus_t is int32).
type cublas struct {
	lib string

	create               func(h *uintptr) int32
	destroy              func(h uintptr) int32
	setStream            func(h, s uintptr) int32
	gemmEx               func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, A uintptr, at, lda int32, B uintptr, bt, ldb int32, beta unsafe.Pointer, C uintptr, ct, ldc int32, compute, algo int32) int32
	gemmStridedBatchedEx func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, A uintptr, at, lda int32, sA int64, B uintptr, bt, ldb int32, sB int64, beta unsafe.Pointer, C uintptr, ct, ldc int32, sC int64, batch, compute, algo int32) int32
}

// cuBLAS constants (cublas_api.h, library_types.h).
const (
	opN           = 0
	opT           = 1
	cudaR32F      = 0
	cudaR16F      = 2
	cudaR16BF     = 14
	compute32F    = 68 // CUBLAS_COMPUTE_32F: plain float32 (no tensor cores unless the math mode allows)
	compute32F16B = 75 // CUBLAS_COMPUTE_32F_FAST_16BF: bf16 tensor cores, float32 accumulation
	compute32FTF  = 77 // CUBLAS_COMPUTE_32F_FAST_TF32
	gemmDefault   = -1 // CUBLAS_GEMM_DEFAULT
)

func loadCUBLAS(names []string) (*cublas, error) {
	h, name, err := openLib(names...)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: %v; install cuBLAS (e.g. the nvidia-cublas-cu12 wheel or the CUDA toolkit) and add its lib directory to LD_LIBRARY_PATH", ErrNoCUBLAS, err)
	}
	c := &cublas{lib: name}
	err = bindAll(h, name, []binding{
		{&c.create, "cublasCreate_v2"},
		{&c.destroy, "cublasDestroy_v2"},
		{&c.setStream, "cublasSetStream_v2"},
		{&c.gemmEx, "cublasGemmEx"},
		{&c.gemmStridedBatchedEx, "cublasGemmStridedBatchedEx"},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// cublasStatusNames are cublasStatus_t's names.
var cublasStatusNames = map[int32]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func cublasCheck(call string, s int32) error {
	if s == 0 {
		return nil
	}
	n, ok := cublasStatusNames[s]
	if !ok {
		n = fmt.Sprintf("cuBLAS status %d", s)
	}
	return fmt.Errorf("cuda: %s: %s", call, n)
}

// gemm is one (strided batched) column-major GEMM, cuBLAS's convention:
// C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i] for i < batch, with op(A) m×k, op(B)
// k×n, C m×n, and A[i] = A + i·strideA (in elements). Operands are device
// addresses. The backend's row-major products are written as gemms by pure
// functions (matmul.go, attention.go) so their orientation is unit-tested
// without a GPU.
type gemm struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	A              uintptr
	lda            int
	strideA        int64
	B              uintptr
	ldb            int
	strideB        int64
	C              uintptr
	ldc            int
	strideC        int64
	batch          int // 1: a plain GEMM
	// The operands' cudaDataType (cudaR32F, cudaR16BF, cudaR16F; 0 is float32).
	aType, bType, cType int32
}

func op(t bool) int32 {
	if t {
		return opT
	}
	return opN
}

// run issues g on the handle's stream. compute is the compute type of an
// all-float32 GEMM (Options.Precision); any 16-bit operand computes in
// CUBLAS_COMPUTE_32F (16-bit inputs on the tensor cores, float32 accumulation).
func (c *cublas) run(h uintptr, g gemm, compute int32) error {
	alpha, beta := g.alpha, g.beta
	if g.aType != cudaR32F || g.bType != cudaR32F || g.cType != cudaR32F {
		compute = compute32F
	}
	if g.batch <= 1 {
		return cublasCheck("cublasGemmEx", c.gemmEx(h, op(g.transA), op(g.transB), int32(g.m), int32(g.n), int32(g.k),
			unsafe.Pointer(&alpha), g.A, g.aType, int32(g.lda), g.B, g.bType, int32(g.ldb),
			unsafe.Pointer(&beta), g.C, g.cType, int32(g.ldc), compute, gemmDefault))
	}
	return cublasCheck("cublasGemmStridedBatchedEx", c.gemmStridedBatchedEx(h, op(g.transA), op(g.transB), int32(g.m), int32(g.n), int32(g.k),
		unsafe.Pointer(&alpha), g.A, g.aType, int32(g.lda), g.strideA, g.B, g.bType, int32(g.ldb), g.strideB,
		unsafe.Pointer(&beta), g.C, g.cType, int32(g.ldc), g.strideC, int32(g.batch), compute, gemmDefault))
}
