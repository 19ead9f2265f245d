package cuda

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gptkit/kernels"
	"gptkit/train"
)

// BenchmarkGPT2Step is one training step of GPT-2 124M (12 layers, 12 heads, 768
// wide, T 1024, Vp 50304, biases) on the GPU through train.Model in the
// trainer's mixed precision: forward and backward (fused classifier, flash
// attention), the gradient norm and AdamW writing the bf16 copy. Batch size
// from $GPTKIT_BENCH_B (default 16), dtype from $GPTKIT_BENCH_DTYPE (default
// bfloat16). It reports tokens/s and MFU against $GPTKIT_PEAK_TFLOPS (default
// 989, an H100/H200 SXM's dense bf16), with nanoGPT's FLOP count (6N +
// 12·L·T·C per token). Skips without a GPU (fails with GPTKIT_REQUIRE_GPU set). With $GPTKIT_PROFILE set to a file
// it then writes there where one more step's GPU time goes, kernel by kernel
// (Profile).
//
//	go test ./kernels/cuda -run '^$' -bench GPT2Step -benchtime 20x
func BenchmarkGPT2Step(b *testing.B) {
	be, err := Open(Options{Device: LocalRank(), Precision: os.Getenv("GPTKIT_BENCH_PRECISION")})
	if err != nil {
		if os.Getenv("GPTKIT_REQUIRE_GPU") != "" { // the GPU check: a skip printed PASS and "ok"
			b.Fatalf("GPTKIT_REQUIRE_GPU is set: %v", err)
		}
		b.Skipf("no GPU: %v", err)
	}
	// A cleanup, not a defer: the model's and stepper's buffers are freed by cleanups,
	// which run after this function returns and before this one (registered first).
	// (With a defer, the backend closed first and their frees panicked as double
	// frees: the first GPU check, 2026-11-26.)
	b.Cleanup(func() { be.Close() })
	dtype := os.Getenv("GPTKIT_BENCH_DTYPE")
	if dtype == "" {
		dtype = "bfloat16"
	}
	dt, err := kernels.ParseDType(dtype)
	if err != nil {
		b.Fatal(err)
	}
	B, T := envInt("GPTKIT_BENCH_B", 16), 1024
	mc := train.ModelConfig{VocabSize: 50257, PaddedVocab: 50304, NLayer: 12, NHead: 12, NEmbd: 768, BlockSize: T, Bias: true}
	m, step := stepper(b, be, mc, dt, B, T, 0.95)
	step(1) // warm-up: JIT, cuBLAS heuristics, the caching allocator
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		step(i + 2)
	}
	secs := time.Since(start).Seconds()
	tokens := float64(b.N * B * T)
	nParams := float64(m.Params.Len()) - float64(mc.BlockSize*mc.NEmbd) // nanoGPT excludes wpe
	flopsPerToken := 6*nParams + 12*float64(mc.NLayer*T*mc.NEmbd)
	peak := float64(envInt("GPTKIT_PEAK_TFLOPS", 989)) * 1e12
	b.ReportMetric(tokens/secs, "tokens/s")
	b.ReportMetric(100*flopsPerToken*tokens/secs/peak, "MFU%")
	if path := os.Getenv("GPTKIT_PROFILE"); path != "" && b.N > 1 {
		// One more step, timed kernel by kernel (the figures above are without
		// it), written to a file: on stdout it would split the benchmark's line.
		b.StopTimer()
		// A failure here is logged, not fatal: the figures above stand.
		var buf bytes.Buffer
		if p, err := be.Profile(func() { step(b.N + 2) }); err != nil {
			fmt.Fprintf(&buf, "no profile: %v\n", err)
		} else {
			fmt.Fprintf(&buf, "one step of GPT-2 124M, %s, B %d × T %d\n", dt, B, T)
			p.Write(&buf)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Logf("profile: %v", err)
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkSimBabyStep is one training step of the baby config (4 layers, 4
// heads, 128 wide, B 12 × T 64, Vp 128) on the simulated GPU, in float32 (fp32
// matmuls, the SIMT attention) and in bfloat16 (the tensor-core attention,
// bf16 GEMMs): every kernel's PTX simulated, the GEMMs in Go. It reports CPU
// seconds per step (the machine may be shared: wall time says little).
//
//	go test ./kernels/cuda -run '^$' -bench SimBabyStep -benchtime 3x
func BenchmarkSimBabyStep(b *testing.B) {
	for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16} {
		b.Run(dt.String(), func(b *testing.B) {
			be := openSim(b, FP32, SimOptions{})
			B, T := 12, 64
			_, step := stepper(b, be, train.ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 4, NHead: 4, NEmbd: 128, BlockSize: T}, dt, B, T, 0.99)
			step(1)
			b.ResetTimer()
			t0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				step(i + 2)
			}
			b.ReportMetric((cpuSeconds()-t0)/float64(b.N), "cpu-s/step")
		})
	}
}

// stepper builds the model mc computing in dt on be for B×T random tokens and
// returns it and a function that runs training step s as the trainer does:
// forward and backward, the gradient norm's partial sums, AdamW (beta2 given,
// clipping at 1, writing the compute-dtype copy) and the step's one download.
func stepper(b testing.TB, be *Backend, mc train.ModelConfig, dt kernels.DType, B, T int, beta2 float32) (*train.Model, func(s int)) {
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	m, err := train.NewModelDType(be, mc, dt)
	must(err)
	b.Cleanup(m.Close)
	m.Init(1)
	must(m.AllocGrads())
	must(m.Reserve(B, T, true))
	n := m.Params.Len()
	alloc := func(dt kernels.DType, n int) kernels.Tensor {
		t, err := be.Alloc("bench", dt, n)
		must(err)
		b.Cleanup(func() { be.Free(t) })
		return t
	}
	mom, vel, norm := alloc(kernels.Float32, n), alloc(kernels.Float32, n), alloc(kernels.Float64, 1)
	r := rand.New(rand.NewPCG(1, 2))
	in, tgt := make([]int32, B*T), make([]int32, B*T)
	for i := range in {
		in[i], tgt[i] = int32(r.IntN(mc.VocabSize)), int32(r.IntN(mc.VocabSize))
	}
	return m, func(s int) {
		be.Zero(m.Grads)
		m.ResetLoss()
		m.Step(in, tgt, B, T, 1/float32(B*T), uint64(s))
		be.SumSquares(norm, m.Grads, n)
		o := kernels.AdamW{LR: 6e-4, Beta1: 0.9, Beta2: beta2, Eps: 1e-8, WeightDecay: 0.1, Step: s, DecayLen: m.DecayLen, MaxNorm: 1}
		be.AdamW(m.Params, m.Grads, mom, vel, m.Work(), norm, o)
		_ = m.LossSum() // the step's one download
	}
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
