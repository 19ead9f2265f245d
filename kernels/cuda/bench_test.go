package cuda

import (
	"math/rand/v2"
	"os"
	"strconv"
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
// 12·L·T·C per token). Skips without a GPU.
//
//	go test ./kernels/cuda -run '^$' -bench GPT2Step -benchtime 20x
func BenchmarkGPT2Step(b *testing.B) {
	be, err := Open(Options{Device: LocalRank(), Precision: os.Getenv("GPTKIT_BENCH_PRECISION")})
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	defer be.Close()
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
	m, err := train.NewModelDType(be, mc, dt)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.Init(1)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(m.AllocGrads())
	must(m.Reserve(B, T, true))
	n := m.Params.Len()
	alloc := func(dt kernels.DType, n int) kernels.Tensor {
		t, err := be.Alloc("bench", dt, n)
		must(err)
		return t
	}
	mom, vel, norm := alloc(kernels.Float32, n), alloc(kernels.Float32, n), alloc(kernels.Float64, 1)
	r := rand.New(rand.NewPCG(1, 2))
	in, tgt := make([]int32, B*T), make([]int32, B*T)
	for i := range in {
		in[i], tgt[i] = int32(r.IntN(mc.VocabSize)), int32(r.IntN(mc.VocabSize))
	}
	step := func(s int) {
		be.Zero(m.Grads)
		m.ResetLoss()
		m.Step(in, tgt, B, T, 1/float32(B*T), uint64(s))
		be.SumSquares(norm, m.Grads, n)
		o := kernels.AdamW{LR: 6e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: s, DecayLen: m.DecayLen, MaxNorm: 1}
		be.AdamW(m.Params, m.Grads, mom, vel, m.Work(), norm, o)
		_ = m.LossSum() // the step's one download
	}
	step(1) // warm-up: JIT, cuBLAS heuristics, the caching allocator
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		step(i + 2)
	}
	secs := time.Since(start).Seconds()
	tokens := float64(b.N * B * T)
	nParams := float64(n) - float64(mc.BlockSize*mc.NEmbd) // nanoGPT excludes wpe
	flopsPerToken := 6*nParams + 12*float64(mc.NLayer*T*mc.NEmbd)
	peak := float64(envInt("GPTKIT_PEAK_TFLOPS", 989)) * 1e12
	b.ReportMetric(tokens/secs, "tokens/s")
	b.ReportMetric(100*flopsPerToken*tokens/secs/peak, "MFU%")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
