package kernels

import "math"

// GradScale is the factor AdamW multiplies each gradient by: o.GradScale (0 means
// 1) times the clipping coefficient min(1, MaxNorm/(‖g‖·GradScale + 1e-6)), where
// ‖g‖² = normSq, rounded to float32 once. ok is false when normSq is not finite:
// the step must be skipped. Every backend computes it this way (a device one on
// the device, from the same float64 partial sums).
func GradScale(normSq float64, o AdamW) (scale float32, ok bool) {
	if math.IsNaN(normSq) || math.IsInf(normSq, 0) {
		return 0, false
	}
	s := float64(o.GradScale)
	if s == 0 {
		s = 1
	}
	if o.MaxNorm > 0 {
		// torch.nn.utils.clip_grad_norm_: scale by max_norm/(norm+1e-6) when that is < 1.
		if c := o.MaxNorm / (math.Sqrt(normSq)*s + 1e-6); c < 1 {
			return float32(s) * float32(c), true
		}
	}
	return float32(s), true
}

// GradientScale is GradScale over a host tensor of partial sums of squares
// (SumSquares' output), summed in order; no gradNorm means no clipping.
func GradientScale(gradNorm Tensor, o AdamW) (scale float32, ok bool) {
	var normSq float64
	if !gradNorm.Nil() {
		for _, p := range gradNorm.Float64s() {
			normSq += p
		}
	} else if o.MaxNorm > 0 {
		panic("kernels: adamw: MaxNorm without gradNorm")
	}
	return GradScale(normSq, o)
}
