package cuda

import (
	"fmt"
	"unsafe"
)

// cublasLtLibs are the cuBLASLt sonames tried, newest first.
var cublasLtLibs = []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}

// cublasLt is the part of cuBLASLt the backend uses: cublasLtMatmul with a
// separate D and an epilogue (bias, GELU and their gradients), which
// cublasGemmEx cannot do. Loaded on the first such matmul. Not yet run on a
// GPU: the simulator's cuBLAS (sim_blas.go) is what tests these gemms, and
// tools/gpu/check.sh (the GPU check) is where this binding will first meet the library.
type cublasLt struct {
	lib       string
	handle    uintptr
	workspace devicePtr
	wsBytes   int

	create        func(h *uintptr) int32
	destroy       func(h uintptr) int32
	descCreate    func(d *uintptr, compute, scale int32) int32
	descDestroy   func(d uintptr) int32
	descSet       func(d uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	layoutCreate  func(l *uintptr, typ int32, rows, cols uint64, ld int64) int32
	layoutDestroy func(l uintptr) int32
	layoutSet     func(l uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	prefCreate    func(p *uintptr) int32
	prefDestroy   func(p uintptr) int32
	prefSet       func(p uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	heuristic     func(h, desc, a, b, c, d, pref uintptr, n int32, results unsafe.Pointer, count *int32) int32
	matmul        func(h, desc uintptr, alpha unsafe.Pointer, A, aDesc, B, bDesc uintptr, beta unsafe.Pointer, C, cDesc, D, dDesc uintptr, algo unsafe.Pointer, ws uintptr, wsBytes uint64, stream uintptr) int32
}

// cublasLt.h's attributes and values.
const (
	ltDescTransA        = 3  // CUBLASLT_MATMUL_DESC_TRANSA, int32
	ltDescTransB        = 4  // CUBLASLT_MATMUL_DESC_TRANSB
	ltDescEpilogue      = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32
	ltDescBiasPointer   = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER, void*
	ltDescAuxPointer    = 11 // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, void*
	ltDescAuxLD         = 12 // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64
	ltDescAuxStride     = 13 // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, int64
	ltDescBiasDataType  = 26 // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32
	ltLayoutBatchCount  = 5  // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32
	ltLayoutBatchStride = 6  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64
	ltPrefMaxWorkspace  = 1  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
	ltWorkspaceBytes    = 32 << 20
)

// ltEpilogues are cublasLtEpilogue_t's values for ours.
var ltEpilogues = map[epilogue]uint32{
	epiNone: 1, epiBias: 4, epiGelu: 32, epiGeluBias: 36, epiGeluAux: 160, epiGeluAuxBias: 164,
	epiDGelu: 192, epiDGeluBGrad: 208, epiBGradA: 256, epiBGradB: 512,
}

func loadCUBLASLt(names []string) (*cublasLt, error) {
	h, name, err := openLib(names...)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: %v; cuBLASLt comes with cuBLAS (the same wheel or toolkit)", ErrNoCUBLAS, err)
	}
	c := &cublasLt{lib: name}
	err = bindAll(h, name, []binding{
		{&c.create, "cublasLtCreate"},
		{&c.destroy, "cublasLtDestroy"},
		{&c.descCreate, "cublasLtMatmulDescCreate"},
		{&c.descDestroy, "cublasLtMatmulDescDestroy"},
		{&c.descSet, "cublasLtMatmulDescSetAttribute"},
		{&c.layoutCreate, "cublasLtMatrixLayoutCreate"},
		{&c.layoutDestroy, "cublasLtMatrixLayoutDestroy"},
		{&c.layoutSet, "cublasLtMatrixLayoutSetAttribute"},
		{&c.prefCreate, "cublasLtMatmulPreferenceCreate"},
		{&c.prefDestroy, "cublasLtMatmulPreferenceDestroy"},
		{&c.prefSet, "cublasLtMatmulPreferenceSetAttribute"},
		{&c.heuristic, "cublasLtMatmulAlgoGetHeuristic"},
		{&c.matmul, "cublasLtMatmul"},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ltHeuristic is cublasLtMatmulHeuristicResult_t: the algorithm (64 bytes),
// its workspace, a status, waves, and reserved words.
type ltHeuristic struct {
	algo      [8]uint64
	workspace uint64
	state     int32
	waves     float32
	reserved  [4]int32
}

// run issues g as one cublasLtMatmul on stream s.
// The errors of its form's refusal are ltRefusals.
func (c *cublasLt) run(s stream, g gemm, alloc func(int) (devicePtr, error)) (err error) {
	if c.handle == 0 {
		if err := cublasCheck("cublasLtCreate", c.create(&c.handle)); err != nil {
			return fmt.Errorf("%w (%s)", err, c.lib)
		}
	}
	if c.workspace == 0 {
		if c.workspace, err = alloc(ltWorkspaceBytes); err != nil {
			return err
		}
		c.wsBytes = ltWorkspaceBytes
	}
	var desc uintptr
	if err := cublasCheck("cublasLtMatmulDescCreate", c.descCreate(&desc, g.compute, cudaR32F)); err != nil {
		return err
	}
	defer c.descDestroy(desc)
	set := func(attr int32, p unsafe.Pointer, n uintptr) error {
		if err := cublasCheck(fmt.Sprintf("cublasLtMatmulDescSetAttribute(%d)", attr), c.descSet(desc, attr, p, uint64(n))); err != nil {
			return ltRefusal{err} // an attribute or value this release does not know
		}
		return nil
	}
	ta, tb, epi := op(g.transA), op(g.transB), ltEpilogues[g.epilogue]
	biasType := g.biasType
	steps := []func() error{
		func() error { return set(ltDescTransA, unsafe.Pointer(&ta), 4) },
		func() error { return set(ltDescTransB, unsafe.Pointer(&tb), 4) },
		func() error { return set(ltDescEpilogue, unsafe.Pointer(&epi), 4) },
	}
	if g.bias != 0 {
		bias := g.bias
		steps = append(steps, func() error { return set(ltDescBiasPointer, unsafe.Pointer(&bias), 8) },
			func() error { return set(ltDescBiasDataType, unsafe.Pointer(&biasType), 4) })
	}
	if g.aux != 0 {
		aux, ld, stride := g.aux, int64(g.ldaux), g.strideAux
		steps = append(steps, func() error { return set(ltDescAuxPointer, unsafe.Pointer(&aux), 8) },
			func() error { return set(ltDescAuxLD, unsafe.Pointer(&ld), 8) },
			func() error { return set(ltDescAuxStride, unsafe.Pointer(&stride), 8) })
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	rowsA, colsA, rowsB, colsB := g.operandDims()
	dp, ldd, strideD := g.D, g.ldd, g.strideD
	if dp == 0 {
		dp, ldd, strideD = g.C, g.ldc, g.strideC
	}
	var layouts [4]uintptr
	for i, l := range []struct {
		typ        int32
		rows, cols int
		ld         int
		stride     int64
	}{{g.aType, rowsA, colsA, g.lda, g.strideA}, {g.bType, rowsB, colsB, g.ldb, g.strideB},
		{g.cType, g.m, g.n, g.ldc, g.strideC}, {g.cType, g.m, g.n, ldd, strideD}} {
		if err := cublasCheck("cublasLtMatrixLayoutCreate", c.layoutCreate(&layouts[i], l.typ, uint64(l.rows), uint64(l.cols), int64(l.ld))); err != nil {
			return err
		}
		defer c.layoutDestroy(layouts[i])
		if g.batch > 1 {
			count, stride := int32(g.batch), l.stride
			if err := cublasCheck("cublasLtMatrixLayoutSetAttribute", c.layoutSet(layouts[i], ltLayoutBatchCount, unsafe.Pointer(&count), 4)); err != nil {
				return err
			}
			if err := cublasCheck("cublasLtMatrixLayoutSetAttribute", c.layoutSet(layouts[i], ltLayoutBatchStride, unsafe.Pointer(&stride), 8)); err != nil {
				return err
			}
		}
	}
	var pref uintptr
	if err := cublasCheck("cublasLtMatmulPreferenceCreate", c.prefCreate(&pref)); err != nil {
		return err
	}
	defer c.prefDestroy(pref)
	ws := uint64(c.wsBytes)
	if err := cublasCheck("cublasLtMatmulPreferenceSetAttribute", c.prefSet(pref, ltPrefMaxWorkspace, unsafe.Pointer(&ws), 8)); err != nil {
		return err
	}
	var res ltHeuristic
	var found int32
	if err := cublasCheck("cublasLtMatmulAlgoGetHeuristic", c.heuristic(c.handle, desc, layouts[0], layouts[1], layouts[2], layouts[3], pref, 1, unsafe.Pointer(&res), &found)); err != nil {
		if refusalStatus(blasStatus(err)) {
			return ltRefusal{err}
		}
		return err
	}
	if found == 0 {
		return ltRefusal{fmt.Errorf("cuda: cuBLASLt has no algorithm for a %dx%dx%d matmul with epilogue %v", g.m, g.n, g.k, g.epilogue)}
	}
	alpha, beta := g.alpha, g.beta
	err = cublasCheck("cublasLtMatmul", c.matmul(c.handle, desc, unsafe.Pointer(&alpha), g.A, layouts[0], g.B, layouts[1],
		unsafe.Pointer(&beta), g.C, layouts[2], dp, layouts[3], unsafe.Pointer(&res.algo), c.workspace, uint64(c.wsBytes), uintptr(s)))
	if err != nil && refusalStatus(blasStatus(err)) {
		return ltRefusal{err}
	}
	return err
}

// refusalStatus reports whether a cublasLtMatmulAlgoGetHeuristic or cublasLtMatmul
// status says the matmul's form was refused before anything ran: NOT_SUPPORTED,
// or INVALID_VALUE (which cuBLASLt also answers for a form it does not take, an
// aux matrix's leading dimension, say).
func refusalStatus(s int32) bool { return s == blasNotSupported || s == blasInvalid }

// close destroys the handle (the workspace is the backend's memory, freed
// with it).
func (c *cublasLt) close() error {
	c.workspace = 0
	if c.handle == 0 {
		return nil
	}
	err := cublasCheck("cublasLtDestroy", c.destroy(c.handle))
	c.handle = 0
	return err
}
