package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"gptkit/kernels"
)

// fakeLt is a cuBLASLt whose calls succeed, but for the answers a test sets.
func fakeLt(descSet, heuristicStatus, found, matmul int32) *cublasLt {
	return &cublasLt{
		lib:           "libcublasLt-fake.so",
		create:        func(h *uintptr) int32 { *h = 1; return 0 },
		destroy:       func(uintptr) int32 { return 0 },
		descCreate:    func(d *uintptr, _, _ int32) int32 { *d = 1; return 0 },
		descDestroy:   func(uintptr) int32 { return 0 },
		descSet:       func(uintptr, int32, unsafe.Pointer, uint64) int32 { return descSet },
		layoutCreate:  func(l *uintptr, _ int32, _, _ uint64, _ int64) int32 { *l = 1; return 0 },
		layoutDestroy: func(uintptr) int32 { return 0 },
		layoutSet:     func(uintptr, int32, unsafe.Pointer, uint64) int32 { return 0 },
		prefCreate:    func(p *uintptr) int32 { *p = 1; return 0 },
		prefDestroy:   func(uintptr) int32 { return 0 },
		prefSet:       func(uintptr, int32, unsafe.Pointer, uint64) int32 { return 0 },
		heuristic: func(_, _, _, _, _, _, _ uintptr, _ int32, _ unsafe.Pointer, n *int32) int32 {
			*n = found
			return heuristicStatus
		},
		matmul: func(_, _ uintptr, _ unsafe.Pointer, _, _, _, _ uintptr, _ unsafe.Pointer, _, _, _, _ uintptr, _ unsafe.Pointer, _ uintptr, _ uint64, _ uintptr) int32 {
			return matmul
		},
	}
}

// Only cuBLASLt saying no to a matmul's form before running it is a refusal
// (the backend then does without epilogues); a failed run or no memory for
// the workspace is a failure, which turned epilogues off silently before.
func TestCUBLASLtRefusals(t *testing.T) {
	g := gemm{m: 8, n: 8, k: 8, alpha: 1, A: 1, lda: 8, B: 2, ldb: 8, C: 3, ldc: 8, batch: 1, epilogue: epiBias, bias: 4}
	workspace := func(int) (devicePtr, error) { return 0x1000, nil }
	oom := &kernels.OutOfMemoryError{Device: "H200", What: "the cuBLASLt workspace", Bytes: ltWorkspaceBytes}
	for _, tc := range []struct {
		name                           string
		descSet, heurStatus, found, mm int32
		alloc                          func(int) (devicePtr, error)
		refused                        bool
	}{
		{"runs", 0, 0, 1, 0, workspace, false},
		{"unknown epilogue value", blasInvalid, 0, 1, 0, workspace, true},
		{"heuristic not supported", 0, blasNotSupported, 1, 0, workspace, true},
		{"no algorithm", 0, 0, 0, 0, workspace, true},
		{"matmul not supported", 0, 0, 1, blasNotSupported, workspace, true},
		{"matmul invalid value", 0, 0, 1, blasInvalid, workspace, true},
		{"heuristic invalid value", 0, blasInvalid, 1, 0, workspace, true},
		{"heuristic fails otherwise", 0, 14, 1, 0, workspace, false},
		{"matmul fails", 0, 0, 1, blasExecFailed, workspace, false},
		{"no memory for the workspace", 0, 0, 1, 0, func(int) (devicePtr, error) { return 0, oom }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fakeLt(tc.descSet, tc.heurStatus, tc.found, tc.mm).run(1, g, tc.alloc)
			if tc.name == "runs" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			oneLine(t, err)
			if refused(err) != tc.refused {
				t.Errorf("refused(%v) = %v, want %v", err, !tc.refused, tc.refused)
			}
			if _, ok := errors.AsType[*kernels.OutOfMemoryError](err); ok != (tc.name == "no memory for the workspace") {
				t.Errorf("%v: out of memory %v", err, ok)
			}
		})
	}
}

// failingBLAS fails every epilogue GEMM with err.
type failingBLAS struct {
	blasAPI
	err error
}

func (f failingBLAS) gemm(s stream, g gemm) error {
	if g.epilogue != epiNone {
		return f.err
	}
	return f.blasAPI.gemm(s, g)
}

// A refused epilogue is said once on Options.Warn and the bias goes through the
// elementwise kernels; an epilogue GEMM that fails otherwise is the op's
// failure, and epilogues stay on.
func TestEpilogueRefusal(t *testing.T) {
	var warned []string
	o := SimOptions{Memory: 1 << 30, RefuseEpilogues: true}
	b, err := Open(Options{Precision: FP32, Sim: &o, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const N, C, OC = 4, 8, 16
	alloc := func(n int) kernels.Tensor {
		x, err := b.Alloc("t", kernels.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	out, inp, w, bias := alloc(N*OC), alloc(N*C), alloc(OC*C), alloc(OC)
	b.Upload(bias, kernels.Float32Bytes(make([]float32, OC)))
	b.MatmulForward(out, inp, w, bias, N, C, OC)
	b.MatmulForward(out, inp, w, bias, N, C, OC)
	b.Sync()
	if len(warned) != 1 || !strings.Contains(warned[0], "cuBLASLt refused") || !strings.Contains(warned[0], "NOT_SUPPORTED") {
		t.Errorf("warnings %q, want one naming the refusal", warned)
	}
	if !b.noEpilogues {
		t.Error("epilogues still on after a refusal")
	}

	b2 := openSim(t, FP32, SimOptions{RefuseEpilogues: true})
	b2.blas = failingBLAS{b2.blas, cublasCheck("cublasLtMatmul", blasExecFailed)}
	out2, err := b2.Alloc("out", kernels.Float32, N*OC)
	if err != nil {
		t.Fatal(err)
	}
	in2, _ := b2.Alloc("inp", kernels.Float32, N*C)
	w2, _ := b2.Alloc("w", kernels.Float32, OC*C)
	bias2, _ := b2.Alloc("bias", kernels.Float32, OC)
	func() {
		defer func() {
			r := recover()
			if e, ok := r.(error); !ok || !strings.Contains(e.Error(), "EXECUTION_FAILED") {
				t.Errorf("a failed epilogue GEMM: %v, want its panic", r)
			}
		}()
		b2.MatmulForward(out2, in2, w2, bias2, N, C, OC)
	}()
	if b2.noEpilogues {
		t.Error("a failed epilogue GEMM turned epilogues off")
	}
}

// countingDriver counts the contexts and streams Open takes and gives back, and
// fails pinned host allocations when told to.
type countingDriver struct {
	driverAPI
	retained, streams *int
	failHost          bool
}

func (d countingDriver) primaryCtxRetain(dev int) (cuContext, error) {
	*d.retained++
	return d.driverAPI.primaryCtxRetain(dev)
}

func (d countingDriver) primaryCtxRelease(dev int) error {
	*d.retained--
	return d.driverAPI.primaryCtxRelease(dev)
}

func (d countingDriver) streamCreate() (stream, error) {
	*d.streams++
	return d.driverAPI.streamCreate()
}

func (d countingDriver) streamDestroy(s stream) error {
	*d.streams--
	return d.driverAPI.streamDestroy(s)
}

func (d countingDriver) memAllocHost(n int) (unsafe.Pointer, error) {
	if d.failHost {
		return nil, Result(2) // CUDA_ERROR_OUT_OF_MEMORY
	}
	return d.driverAPI.memAllocHost(n)
}

// An Open that fails after taking the GPU's context gives it back, with its
// stream: the context held the GPU's memory for nothing (--device auto then ran
// on the CPU beside it).
func TestOpenFailureReleasesContext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patch    func(string, []byte) []byte
		failHost bool
	}{
		{"kernels do not load", func(name string, src []byte) []byte {
			if name == "attention.ptx" {
				return []byte("not ptx")
			}
			return src
		}, false},
		{"no pinned memory", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var retained, streams int
			o := Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30, PatchPTX: tc.patch}}
			o.wrapDriver = func(d driverAPI) driverAPI {
				return countingDriver{d, &retained, &streams, tc.failHost}
			}
			b, err := Open(o)
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			oneLine(t, err)
			if retained != 0 || streams != 0 {
				t.Errorf("after %v: %d contexts and %d streams still held", err, retained, streams)
			}
		})
	}
	var retained, streams int
	o := Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30}}
	o.wrapDriver = func(d driverAPI) driverAPI { return countingDriver{d, &retained, &streams, false} }
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if retained != 1 || streams != 1 {
		t.Errorf("an open backend holds %d contexts and %d streams, want 1 and 1", retained, streams)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if retained != 0 || streams != 0 {
		t.Errorf("after Close: %d contexts and %d streams still held", retained, streams)
	}
}
