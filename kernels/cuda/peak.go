package cuda

import "strings"

// gpuPeak is a GPU's dense (no sparsity) peak in TFLOP/s per matmul precision, from
// NVIDIA's datasheets (SXM/PCIe variants as named by the driver).
type gpuPeak struct {
	match            func(name string) bool
	fp32, tf32, bf16 float64
}

var gpuPeaks = []gpuPeak{
	{func(n string) bool { return strings.Contains(n, "H200") }, 67, 494.7, 989.4},
	{func(n string) bool { return strings.Contains(n, "H100") && strings.Contains(n, "PCIe") }, 51.2, 378, 756},
	{func(n string) bool { return strings.Contains(n, "H100") }, 67, 494.7, 989.4},
	{func(n string) bool { return strings.Contains(n, "A100") }, 19.5, 156, 312},
	{func(n string) bool { return strings.Contains(n, "L40S") }, 91.6, 183, 362},
	{func(n string) bool { return strings.HasSuffix(n, " L4") }, 30.3, 60, 121},
	{func(n string) bool { return strings.Contains(n, "RTX 4090") }, 82.6, 82.6, 165.2},
}

// PeakFLOPS returns the device's dense peak FLOP/s for the precision the matmuls run
// in (the trainer's MFU divides by it), or 0 when the device is not in the table.
func (b *Backend) PeakFLOPS() float64 {
	return peakFLOPS(b.info.Name, b.peakPrec())
}

// peakPrec is the precision of the matmuls for the peak: bf16 once 16-bit tensors are
// allocated (a model in bfloat16 or float16 runs its GEMMs on 16-bit operands whatever
// Options.Precision says, and fp16's dense peak is bf16's on every card of the table),
// else Options.Precision. (It took Options.Precision alone: a bfloat16 model with
// GPTKIT_CUDA_PRECISION=fp32 had its MFU against the fp32 peak, 15 times too high.)
func (b *Backend) peakPrec() string {
	if b.halves.Load() != 0 {
		return BF16
	}
	return b.prec
}

func peakFLOPS(name, prec string) float64 {
	for _, p := range gpuPeaks {
		if !p.match(name) {
			continue
		}
		switch prec {
		case BF16:
			return p.bf16 * 1e12
		case TF32:
			return p.tf32 * 1e12
		}
		return p.fp32 * 1e12
	}
	return 0
}
