package cpu

import (
	"sync"
	"time"

	"gptkit/kernels"
)

// The peak the trainer's MFU is measured against on the CPU. A CPU's datasheet peak
// (cores x GHz x FMA lanes) is rarely what a matmul reaches, and it moves with turbo,
// SMT and other jobs, so the peak is measured: the best throughput of this backend's
// own MatmulForward on a cache-friendly problem (512x512x512, BenchmarkMatmul's size
// class) over about 0.2 s, on the backend's threads. MFU on the CPU therefore says how
// close a whole training step gets to the GEMM kernel's own best on this machine now.
const (
	peakN       = 512
	peakMeasure = 200 * time.Millisecond
)

// peaks caches PeakFLOPS per backend: the probe runs once.
var peaks sync.Map // *Backend -> float64

// PeakFLOPS returns the FLOP/s of the backend's matmul measured at first call (see
// above); float32 is the only precision the CPU backend computes in.
func (b *Backend) PeakFLOPS() float64 {
	if v, ok := peaks.Load(b); ok {
		return v.(float64)
	}
	v, _ := peaks.LoadOrStore(b, b.measurePeak())
	return v.(float64)
}

// measurePeak times MatmulForward on peakN-sized operands until peakMeasure has
// passed, after one untimed warm-up call, and returns the best call's FLOP/s.
func (b *Backend) measurePeak() float64 {
	const n = peakN
	out, inp, w := alignedFloats(n*n), alignedFloats(n*n), alignedFloats(n*n)
	for i := range inp {
		inp[i] = float32(i%7) * 0.25
		w[i] = float32(i%5) * 0.5
	}
	to, ti, tw, none := kernels.Host(out), kernels.Host(inp), kernels.Host(w), kernels.Tensor{}
	b.MatmulForward(to, ti, tw, none, n, n, n)
	best := 0.0
	for start := time.Now(); time.Since(start) < peakMeasure; {
		t0 := time.Now()
		b.MatmulForward(to, ti, tw, none, n, n, n)
		if secs := time.Since(t0).Seconds(); secs > 0 {
			best = max(best, 2*n*n*n/secs)
		}
	}
	return best
}
