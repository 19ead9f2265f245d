package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// cublasLibs are the cuBLAS sonames tried, newest first (of those the driver can run:
// forDriver).
var cublasLibs = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}

// forDriver keeps the sonames ("lib....so.MAJOR") of CUDA releases the driver
// (cuDriverGetVersion's 1000 x major + 10 x minor) runs: a cuBLAS 13 loads under a
// CUDA 12 driver, then fails at cublasCreate, where cuBLAS 12 would have worked.
func forDriver(names []string, driverVersion int) []string {
	var out []string
	for _, n := range names {
		_, suffix, ok := strings.Cut(n, ".so.")
		major, err := strconv.Atoi(suffix)
		if !ok || err != nil || major*1000 <= driverVersion {
			out = append(out, n)
		}
	}
	return out
}

// cublas is the part of cuBLAS the backend uses (cublasStatus_t is int32): the
// blasAPI of the real library.
type cublas struct {
	lib    string
	handle uintptr
	stream stream // the stream the handle is set to

	lt      *cublasLt // loaded on the first matmul that needs it
	ltNames []string
	// workspace allocates cuBLASLt's workspace from the backend's memory
	// (freed with it).
	workspace func(bytes int) (devicePtr, error)

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
	cudaR32F      = 0  // cudaDataType CUDA_R_32F
	cudaR16F      = 2  // CUDA_R_16F
	cudaR16BF     = 14 // CUDA_R_16BF
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

// ltRefusal is cuBLASLt refusing a matmul's form (its epilogue, its types)
// before running anything: the library is missing, a descriptor attribute is
// unknown to it, it finds no algorithm, or it answers NOT_SUPPORTED or
// INVALID_VALUE (refusalStatus). The
// backend then does without epilogues; any other error is a failure.
type ltRefusal struct{ error }

func (e ltRefusal) Unwrap() error { return e.error }

// refused reports whether err is cuBLASLt refusing a matmul's form.
func refused(err error) bool {
	_, ok := errors.AsType[ltRefusal](err)
	return ok
}

// cublasCheck is nil for status 0, else a *blasStatusError naming call.
func cublasCheck(call string, s int32) error {
	if s == 0 {
		return nil
	}
	return &blasStatusError{call, s}
}

// blasStatusError is a cuBLAS or cuBLASLt call's failed cublasStatus_t.
type blasStatusError struct {
	call   string
	status int32
}

func (e *blasStatusError) Error() string {
	n, ok := cublasStatusNames[e.status]
	if !ok {
		n = fmt.Sprintf("cuBLAS status %d", e.status)
	}
	return fmt.Sprintf("cuda: %s: %s", e.call, n)
}

// blasStatus is err's cublasStatus_t, 0 when it is none.
func blasStatus(err error) int32 {
	if e, ok := errors.AsType[*blasStatusError](err); ok {
		return e.status
	}
	return 0
}

// gemm is one (strided batched) column-major GEMM, cuBLAS's convention:
// C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i] for i < batch, with op(A) m×k, op(B)
// k×n, C m×n, and A[i] = A + i·strideA (in elements). Operands are device
// addresses. The backend's row-major products are written as gemms by pure
// functions (matmul.go, attention.go) so their orientation is unit-tested
// without a GPU. The fields after batch are cuBLASLt's (zero values: float32
// operands, the backend's compute type, D = C, no epilogue).
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

	aType, bType, cType int32 // cudaDataType of A, B, C (and D): 0 is CUDA_R_32F
	compute             int32 // cublasComputeType_t; 0: the backend's precision
	// cuBLASLt only: D (0: D is C, with C's ld and stride), an epilogue, its
	// bias vector and auxiliary matrix (GELU's input, saved for the backward).
	D         uintptr
	ldd       int
	strideD   int64
	epilogue  epilogue
	bias      uintptr
	biasType  int32
	aux       uintptr
	ldaux     int
	strideAux int64
}

// epilogue is what cuBLASLt applies to alpha·op(A)·op(B) + beta·C before it is
// stored in D (bias over the m rows; GELU is the tanh form).
type epilogue int

const (
	epiNone        epilogue = iota
	epiBias                 // D = acc + bias[i]
	epiGelu                 // D = gelu(acc)
	epiGeluBias             // D = gelu(acc + bias[i])
	epiGeluAux              // D = gelu(acc), aux = acc
	epiGeluAuxBias          // D = gelu(acc + bias[i]), aux = acc + bias[i]
	epiDGelu                // D = acc · gelu'(aux)
	epiDGeluBGrad           // D = acc · gelu'(aux), bias[i] = Σ_j D[i,j]
	epiBGradA               // D = acc, bias[i] = Σ_k op(A)[i,k]
	epiBGradB               // D = acc, bias[j] = Σ_k op(B)[k,j]
)

var epilogueNames = [...]string{"none", "bias", "gelu", "gelu+bias", "gelu+aux", "gelu+aux+bias", "dgelu", "dgelu+bgrad", "bgrad A", "bgrad B"}

func (e epilogue) String() string {
	if int(e) < len(epilogueNames) {
		return epilogueNames[e]
	}
	return fmt.Sprintf("epilogue(%d)", int(e))
}

func op(t bool) int32 {
	if t {
		return opT
	}
	return opN
}

func (c *cublas) name() string { return c.lib }

// gemm issues g on stream s: cublasGemmEx or cublasGemmStridedBatchedEx, or
// cublasLtMatmul for the forms only cuBLASLt has (a separate D, an epilogue).
func (c *cublas) gemm(s stream, g gemm) error {
	if g.epilogue != epiNone || g.D != 0 && g.D != g.C {
		if c.lt == nil {
			names := c.ltNames
			if names == nil {
				names = cublasLtLibs
			}
			lt, err := loadCUBLASLt(names)
			if err != nil {
				return ltRefusal{err} // (an epilogue then takes the elementwise kernels)
			}
			c.lt = lt
		}
		return c.lt.run(s, g, c.workspace)
	}
	if s != c.stream || c.stream == 0 {
		if err := cublasCheck("cublasSetStream", c.setStream(c.handle, uintptr(s))); err != nil {
			return err
		}
		c.stream = s
	}
	alpha, beta := g.alpha, g.beta
	if g.batch <= 1 {
		return cublasCheck("cublasGemmEx", c.gemmEx(c.handle, op(g.transA), op(g.transB), int32(g.m), int32(g.n), int32(g.k),
			unsafe.Pointer(&alpha), g.A, g.aType, int32(g.lda), g.B, g.bType, int32(g.ldb),
			unsafe.Pointer(&beta), g.C, g.cType, int32(g.ldc), g.compute, gemmDefault))
	}
	return cublasCheck("cublasGemmStridedBatchedEx", c.gemmStridedBatchedEx(c.handle, op(g.transA), op(g.transB), int32(g.m), int32(g.n), int32(g.k),
		unsafe.Pointer(&alpha), g.A, g.aType, int32(g.lda), g.strideA, g.B, g.bType, int32(g.ldb), g.strideB,
		unsafe.Pointer(&beta), g.C, g.cType, int32(g.ldc), g.strideC, int32(g.batch), g.compute, gemmDefault))
}

func (c *cublas) close() error {
	var err error
	if c.lt != nil {
		err = c.lt.close()
	}
	if c.handle == 0 {
		return err
	}
	if e := cublasCheck("cublasDestroy", c.destroy(c.handle)); err == nil {
		err = e
	}
	c.handle = 0
	return err
}

var _ blasAPI = (*cublas)(nil)
