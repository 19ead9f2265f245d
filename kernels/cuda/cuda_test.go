package cuda

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"gptkit/kernels"
)

// These tests need no GPU: they run in every CI job. gpu_test.go runs the
// conformance suite where a device is present.

func oneLine(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestOpenNoDriver(t *testing.T) {
	o := Options{DriverLibs: []string{"libcuda-gptkit-missing.so.1"}}
	_, err := Open(o)
	oneLine(t, err)
	if !errors.Is(err, ErrNoDriver) {
		t.Errorf("Open without a driver: %v, want ErrNoDriver", err)
	}
	if _, err := Probe(o); !errors.Is(err, ErrNoDriver) {
		t.Errorf("Probe without a driver: %v, want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "--device cpu") {
		t.Errorf("the error does not say what to do: %v", err)
	}
}

// TestOpenHere opens the real driver: on a machine without a GPU (CI) it must
// fail with ErrNoDriver or ErrNoDevice on one line.
func TestOpenHere(t *testing.T) {
	b, err := Open(Options{})
	if err == nil {
		t.Logf("GPU present: %s", b.Name())
		b.Close()
		return
	}
	oneLine(t, err)
	if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) && !errors.Is(err, ErrNoCUBLAS) && !errors.Is(err, ErrDriverTooOld) {
		t.Errorf("Open: %v, want a no-driver, no-device, too-old or no-cuBLAS error", err)
	}
	t.Logf("no GPU here: %v", err)
}

func TestOpenBadPrecision(t *testing.T) {
	_, err := Open(Options{Precision: "fp8"})
	oneLine(t, err)
	if !strings.Contains(err.Error(), "bf16") {
		t.Errorf("%v does not list the choices", err)
	}
}

func TestNCCLMissing(t *testing.T) {
	_, err := NewUniqueID([]string{"libnccl-gptkit-missing.so.2"})
	oneLine(t, err)
	if !errors.Is(err, ErrNoNCCL) {
		t.Errorf("NewUniqueID without NCCL: %v, want ErrNoNCCL", err)
	}
}

func TestCUBLASMissing(t *testing.T) {
	_, err := loadCUBLAS([]string{"libcublas-gptkit-missing.so.12"})
	oneLine(t, err)
	if !errors.Is(err, ErrNoCUBLAS) {
		t.Errorf("loadCUBLAS: %v, want ErrNoCUBLAS", err)
	}
}

// TestArgumentChecks: bad arguments panic before the backend touches a device
// (the zero Backend has none), with the kernels' messages; good arguments get as
// far as the device.
func TestArgumentChecks(t *testing.T) {
	b := &Backend{}
	next := uintptr(1 << 20)
	dev := func(dt kernels.DType, n int) kernels.Tensor { // a tensor of this (unopened) backend
		next += uintptr(n*dt.Size()+256) &^ 255
		return kernels.NewTensor(kernels.NewBuffer(b, next, nil, n*dt.Size(), "test"), dt, n)
	}
	f := func(n int) kernels.Tensor { return dev(kernels.Float32, n) }
	bf := func(n int) kernels.Tensor { return dev(kernels.BFloat16, n) }
	ids := func(n int) kernels.Tensor { return dev(kernels.Int32, n) }
	host := kernels.Host(make([]float32, 9))
	none := kernels.Tensor{}
	bad := map[string]func(){
		"matmul short out":      func() { b.MatmulForward(f(5), f(6), f(6), none, 2, 3, 3) },
		"matmul zero dim":       func() { b.MatmulForward(f(6), f(6), f(6), none, 2, 0, 3) },
		"matmul short weight":   func() { b.MatmulBackward(f(6), f(9), none, f(6), f(6), f(8), none, 2, 3, 3) },
		"matmul host weight":    func() { b.MatmulForward(f(6), f(6), host, none, 2, 3, 3) },
		"matmul mixed dtypes":   func() { b.MatmulForward(f(6), bf(6), f(9), none, 2, 3, 3) },
		"layernorm short rstd":  func() { b.LayerNormForward(f(6), f(2), f(1), f(6), f(3), none, 2, 3) },
		"layernorm bwd dbias":   func() { b.LayerNormBackward(f(6), f(3), f(2), none, f(6), f(6), f(3), f(2), f(2), 2, 3) },
		"attention heads":       func() { b.AttentionForward(f(10), f(4), f(30), 1, 2, 5, 2) },
		"attention bwd dqkv":    func() { b.AttentionBackward(f(29), f(10), f(30), f(10), f(2), 1, 2, 5, 1) },
		"encoder float ids":     func() { b.EncoderForward(f(4), f(2), f(4), f(4), 1, 2, 2) },
		"classifier V > Vp":     func() { b.Classifier(f(1), none, none, none, f(4), f(2), f(8), ids(1), 1, 1, 2, 5, 4) },
		"classifier no scratch": func() { b.Classifier(f(1), none, none, none, f(3), f(2), f(8), ids(1), 1, 1, 2, 3, 4) },
		"dropout p=1":           func() { b.DropoutForward(f(8), f(8), 1, 0) },
		"dropout bwd p<0":       func() { b.DropoutBackward(f(8), f(8), -0.5, 0) },
		"adamw step 0":          func() { b.AdamW(f(3), f(3), f(3), f(3), none, none, kernels.AdamW{LR: 1, Step: 0}) },
		"adamw short m":         func() { b.AdamW(f(3), f(3), f(2), f(3), none, none, kernels.AdamW{LR: 1, Step: 1}) },
		"adamw clip no norm":    func() { b.AdamW(f(3), f(3), f(3), f(3), none, none, kernels.AdamW{LR: 1, Step: 1, MaxNorm: 1}) },
		"sumsquares block":      func() { b.SumSquares(dev(kernels.Float64, 2), f(7), 3) },
		"upload size":           func() { b.Upload(f(4), make([]byte, 3)) },
		"upload host tensor":    func() { b.Upload(host, make([]byte, 36)) },
		"convert short":         func() { b.Convert(bf(8), f(7)) },
	}
	for name, fn := range bad {
		if msg := panicOf(fn); !strings.HasPrefix(msg, "kernels: ") {
			t.Errorf("%s: panic %q, want an argument check's (kernels: ...)", name, msg)
		}
	}
	good := map[string]func(){
		"matmul":    func() { b.MatmulForward(f(6), f(6), f(9), none, 2, 3, 3) },
		"gelu":      func() { b.MatmulGeluForward(bf(6), bf(6), bf(6), bf(9), none, 2, 3, 3) },
		"encoder":   func() { b.EncoderForward(f(4), ids(2), f(4), f(4), 1, 2, 2) },
		"attention": func() { b.AttentionForward(bf(128), f(2), bf(384), 1, 2, 64, 1) },
		"zero":      func() { b.Zero(f(3)) },
		"alloc":     func() { b.Alloc("test", kernels.Float32, 3) },
		"upload":    func() { b.Upload(f(4), make([]byte, 16)) },
	}
	for name, fn := range good {
		if msg := panicOf(fn); msg != "cuda: backend used without Open" {
			t.Errorf("%s with good arguments: panic %q, want the no-device one", name, msg)
		}
	}
	// Empty ops do nothing at all.
	for name, fn := range map[string]func(){
		"dropout": func() { b.DropoutForward(f(0), f(0), 0.5, 1) },
		"zero":    func() { b.Zero(f(0)) },
		"adamw":   func() { b.AdamW(f(0), f(0), f(0), f(0), none, none, kernels.AdamW{Step: 1}) },
		"free":    func() { b.Free(none) },
	} {
		if msg := panicOf(fn); msg != "" {
			t.Errorf("empty %s: panic %q", name, msg)
		}
	}
}

func panicOf(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			switch v := r.(type) {
			case string:
				msg = v
			case error:
				msg = v.Error()
			default:
				msg = "?"
			}
		}
	}()
	fn()
	return ""
}

func TestEncoderBuckets(t *testing.T) {
	inp := []int32{5, 2, 5, 0, 2, 5, 9}
	tok, start, pos := encoderBuckets(inp)
	want := map[int32][]int32{0: {3}, 2: {1, 4}, 5: {0, 2, 5}, 9: {6}}
	if len(tok) != len(want) || len(start) != len(tok)+1 || len(pos) != len(inp) {
		t.Fatalf("buckets %v %v %v", tok, start, pos)
	}
	if !sort.SliceIsSorted(tok, func(i, j int) bool { return tok[i] < tok[j] }) {
		t.Errorf("tokens not sorted: %v", tok)
	}
	for k, tk := range tok {
		got := pos[start[k]:start[k+1]]
		if !equalInts(got, want[tk]) {
			t.Errorf("token %d at %v, want %v", tk, got, want[tk])
		}
	}
	if tok, start, pos := encoderBuckets(nil); len(tok) != 0 || len(start) != 1 || len(pos) != 0 {
		t.Errorf("empty: %v %v %v", tok, start, pos)
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPTX checks the embedded PTX: a module per .cu file, PTX ISA 7.8 for sm_80
// (what drivers from R520 JIT), and every kernel the Go side launches there.
func TestPTX(t *testing.T) {
	mods, names, err := ptxModules()
	if err != nil {
		t.Fatal(err)
	}
	cu, _ := readDirNames(".", ".cu")
	if len(cu) != len(names) {
		t.Errorf("%d .cu files %v but %d PTX modules %v: run make ptx", len(cu), cu, len(names), names)
	}
	have := map[string]bool{}
	for _, name := range names {
		src := string(mods[name])
		if !strings.Contains(src, "\n.version 7.8\n") || !strings.Contains(src, "\n.target sm_80\n") {
			t.Errorf("%s: not PTX ISA 7.8 for sm_80", name)
		}
		for _, k := range kernelEntries(mods[name]) {
			have[k] = true
		}
	}
	var want []string
	for _, base := range []string{"bias_fill", "gelu_forward", "gelu_backward_inplace", "dropout", "encoder_forward",
		"encoder_backward_wpe", "encoder_backward_wte", "layernorm_forward", "residual_layernorm_forward",
		"layernorm_backward_dinp", "layernorm_backward_partials", "column_partials", "sum_squares_chunks",
		"classifier_rows", "adamw", "attention_backward_d", "attention_forward_simt", "attention_backward_dq_simt",
		"attention_backward_dkdv_simt"} {
		for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16, kernels.Float16} {
			want = append(want, kname(base, dt))
		}
	}
	for _, s := range []string{"f32", "bf16", "f16"} {
		for _, d := range []string{"f32", "bf16", "f16"} {
			want = append(want, "convert_"+s+"_"+d)
		}
	}
	for _, s := range []string{"bf16", "f16"} {
		for _, hs := range []int{16, 32, 64, 128} {
			for _, k := range []string{"flash_forward", "flash_backward_dkdv", "flash_backward_dq"} {
				want = append(want, fmt.Sprintf("%s_%s_%d", k, s, hs))
			}
		}
	}
	want = append(want, "reduce_partials_add", "sum_partials_d", "loss_sum")
	for _, k := range want {
		if !have[k] {
			t.Errorf("the Go side launches %s, which no PTX module has: run make ptx", k)
		}
	}
}

func readDirNames(dir, ext string) ([]string, error) {
	es, err := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ext) {
			out = append(out, e.Name())
		}
	}
	return out, err
}

// The cuBLASLt binding's struct matches cublasLtMatmulHeuristicResult_t (96
// bytes), and a missing library is one line.
func TestCUBLASLt(t *testing.T) {
	if n := unsafe.Sizeof(ltHeuristic{}); n != 96 {
		t.Errorf("ltHeuristic is %d bytes, cublasLtMatmulHeuristicResult_t 96", n)
	}
	_, err := loadCUBLASLt([]string{"libcublasLt-gptkit-missing.so.12"})
	oneLine(t, err)
	if !errors.Is(err, ErrNoCUBLAS) {
		t.Errorf("%v, want ErrNoCUBLAS", err)
	}
	for e := epiNone; e <= epiBGradB; e++ {
		if _, ok := ltEpilogues[e]; !ok {
			t.Errorf("epilogue %v has no cuBLASLt value", e)
		}
	}
}
