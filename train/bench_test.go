package train

import (
	"context"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/loader"
)

// randomSource is a loader.Source of random token ids, so the benchmark measures the
// step, not the data.
type randomSource struct {
	n      int64
	seqLen int
	vocab  int
}

func (s randomSource) Len() int64  { return s.n }
func (s randomSource) SeqLen() int { return s.seqLen }
func (s randomSource) Sample(i int64, dst []int) []int {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	for range s.seqLen + 1 {
		dst = append(dst, r.IntN(s.vocab))
	}
	return dst
}
func (s randomSource) SampleInt32(i int64, dst []int32) []int32 {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	for range s.seqLen + 1 {
		dst = append(dst, int32(r.IntN(s.vocab)))
	}
	return dst
}

var _ loader.Source = randomSource{}

// benchTrainer is a Trainer on the CPU backend over random data, ready for trainStep.
func benchTrainer(b *testing.B, cfg Config, vocab int) *Trainer {
	return bareTrainer(b, cpu.New(cfg.Threads), cfg, vocab, Single{})
}

// bareTrainer is a Trainer of rank coll.Rank() on be over random data, built as
// NewTrainer builds it (without data files, checkpoints or metrics), its
// weights initialized from cfg.Seed.
func bareTrainer(tb testing.TB, be kernels.Backend, cfg Config, vocab int, coll Collectives) *Trainer {
	mc := cfg.Model(vocab)
	B, T := cfg.BatchSize, cfg.BlockSize
	t := &Trainer{cfg: cfg, be: be, coll: Full(coll), saved: -1,
		sampler: &loader.Sampler{Samples: randomSource{n: 1 << 40, seqLen: T, vocab: vocab}, Rank: coll.Rank(), World: coll.World(), Micro: B, GradAccum: cfg.GradAccum}}
	var err error
	if t.dtype, err = ResolveDType(cfg.Dtype, be); err != nil {
		tb.Fatal(err)
	}
	if err := t.build(mc); err != nil {
		tb.Fatal(err)
	}
	t.model.Init(uint64(cfg.Seed))
	return t
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkTrainStep times optimizer steps (forward, backward, clipping, AdamW) on
// the CPU backend with all threads:
//
//   - baby: the baby config of configs/shakespeare-char.yaml (4 layers, 4 heads, 128
//     wide, block 64, batch 12, vocab 65).
//   - 124m: GPT-2 124M (12 layers, 12 heads, 768 wide), B=1, T=1024, vocab 50304
//     (nanoGPT's padded vocabulary); one step is seconds: run it with -benchtime=1x.
//
// It reports tokens/s (wall) and tokens/cpu-s (tokens per second of CPU time the
// process used, from getrusage: what a step costs whatever the thread count).
//
//	go test ./train -run '^$' -bench BenchmarkTrainStep/baby
//	go test ./train -run '^$' -bench BenchmarkTrainStep/124m -benchtime=1x
func BenchmarkTrainStep(b *testing.B) {
	baby := Default()
	baby.NLayer, baby.NHead, baby.NEmbd, baby.BlockSize = 4, 4, 128, 64
	baby.BatchSize, baby.GradAccum, baby.Dropout = 12, 1, 0
	baby.LR, baby.MinLR, baby.WarmupSteps, baby.LRDecaySteps, baby.Beta2 = 1e-3, 1e-4, 100, 2000, 0.99

	gpt2 := Default()
	gpt2.BatchSize, gpt2.GradAccum = 1, 1

	for _, bc := range []struct {
		name  string
		cfg   Config
		vocab int
	}{{"baby", baby, 65}, {"124m", gpt2, 50304}} {
		b.Run(bc.name, func(b *testing.B) {
			t := benchTrainer(b, bc.cfg, bc.vocab)
			ctx := context.Background()
			if _, err := t.trainStep(ctx); err != nil { // warm up: page in every buffer
				b.Fatal(err)
			}
			runtime.GC()
			tokens := float64(bc.cfg.BatchSize * bc.cfg.BlockSize * bc.cfg.GradAccum)
			cpu0 := cpuSeconds()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, err := t.trainStep(ctx); err != nil {
					b.Fatal(err)
				}
			}
			wall := time.Since(start).Seconds()
			b.StopTimer()
			cpuUsed := cpuSeconds() - cpu0
			b.ReportMetric(tokens*float64(b.N)/wall, "tokens/s")
			if cpuUsed > 0 {
				b.ReportMetric(tokens*float64(b.N)/cpuUsed, "tokens/cpu-s")
			}
			b.ReportMetric(float64(t.model.Config.NumParams()), "params")
		})
	}
}
