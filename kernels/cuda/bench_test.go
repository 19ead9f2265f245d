package cuda

import (
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
// wide, T 1024, Vp 50304, biases) on the GPU through train.Model: forward,
// backward, global norm, AdamW. Batch size from $GPTKIT_BENCH_B (default 16).
// It reports tokens/s and MFU against $GPTKIT_PEAK_TFLOPS (default 989, an
// H100/H200 SXM's dense bf16), with nanoGPT's FLOP count (6N + 12·L·T·C per
// token). Skips without a GPU.
//
//	go test ./kernels/cuda -run '^$' -bench GPT2Step -benchtime 20x
func BenchmarkGPT2Step(b *testing.B) {
	be, err := Open(Options{Device: LocalRank(), Precision: os.Getenv("GPTKIT_BENCH_PRECISION")})
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	defer be.Close()
	B, T := envInt("GPTKIT_BENCH_B", 16), 1024
	mc := train.ModelConfig{VocabSize: 50257, PaddedVocab: 50304, NLayer: 12, NHead: 12, NEmbd: 768, BlockSize: T, Bias: true}
	m, step := stepper(b, be, mc, B, T, 0.95)
	step(1) // warm-up: JIT, cuBLAS heuristics, page migration of the weights
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		step(i + 2)
	}
	secs := time.Since(start).Seconds()
	tokens := float64(b.N * B * T)
	nParams := float64(len(m.Params)) - float64(mc.BlockSize*mc.NEmbd) // nanoGPT excludes wpe
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

// BenchmarkSimBabyStep is one training step of the baby config (4 layers, 4
// heads, 128 wide, B 12 × T 64, Vp 128) on the simulated GPU (fp32 matmuls):
// every kernel's PTX simulated, the GEMMs in Go. It reports CPU seconds per
// step (the machine may be shared: wall time says little).
//
//	go test ./kernels/cuda -run '^$' -bench SimBabyStep -benchtime 3x
func BenchmarkSimBabyStep(b *testing.B) {
	be := openSim(b, FP32, SimOptions{})
	B, T := 12, 64
	_, step := stepper(b, be, train.ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 4, NHead: 4, NEmbd: 128, BlockSize: T}, B, T, 0.99)
	step(1)
	b.ResetTimer()
	t0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		step(i + 2)
	}
	b.ReportMetric((cpuSeconds()-t0)/float64(b.N), "cpu-s/step")
}

// stepper builds the model mc on be for B×T random tokens and returns it and
// a function that runs training step s: forward, backward, the global norm,
// AdamW (beta2 given), and a Sync.
func stepper(b *testing.B, be *Backend, mc train.ModelConfig, B, T int, beta2 float32) (*train.Model, func(s int)) {
	m, err := train.NewModel(be, mc)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(1)
	m.AllocGrads()
	m.Reserve(B, T, true)
	mom, vel := be.Alloc(len(m.Params)), be.Alloc(len(m.Params))
	r := rand.New(rand.NewPCG(1, 2))
	in, tgt := make([]int32, B*T), make([]int32, B*T)
	for i := range in {
		in[i], tgt[i] = int32(r.IntN(mc.VocabSize)), int32(r.IntN(mc.VocabSize))
	}
	return m, func(s int) {
		be.Zero(m.Grads)
		m.Forward(in, tgt, B, T, true, uint64(s))
		m.Backward(1 / float32(B*T))
		_ = be.SumSquares(m.Grads)
		o := kernels.AdamW{LR: 6e-4, Beta1: 0.9, Beta2: beta2, Eps: 1e-8, WeightDecay: 0.1, Step: s}
		be.AdamW(m.Params[:m.DecayLen], m.Grads[:m.DecayLen], mom[:m.DecayLen], vel[:m.DecayLen], o)
		o.WeightDecay = 0
		be.AdamW(m.Params[m.DecayLen:], m.Grads[m.DecayLen:], mom[m.DecayLen:], vel[m.DecayLen:], o)
		be.Sync()
	}
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
