package ref

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Classifier: row by row, logits = inp·weightᵀ (rounded to the logits
// scratch's dtype, as a GPU stores them), the softmax over the first V, the loss
// logsumexp - logit[target], and dlogits = (p - onehot)·dloss (rounded the same
// way) into dinp = dlogits·weight and dweight += dlogitsᵀ·inp.
func (Backend) Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets kernels.Tensor, dloss float32, N, C, V, Vp int) {
	check.Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets, N, C, V, Vp)
	check.Host("classifier", losses, lossSum, dinp, dweight, logits, inp, weight, targets)
	tg := targets.Int32s()[:N]
	check.Targets("classifier", tg, V)
	x, w := vals(inp, N*C), vals(weight, Vp*C)
	grads := !dinp.Nil() || !dweight.Nil()
	rowDT := logits.DType()
	ls := make([]float64, N)
	di := make([]float64, N*C)
	dw := make([]float64, Vp*C)
	row := make([]float64, V)
	for n := 0; n < N; n++ {
		t := int(tg[n])
		if t < 0 {
			continue // loss 0, no gradient
		}
		mx := math.Inf(-1)
		for j := 0; j < V; j++ {
			var s float64
			for i := 0; i < C; i++ {
				s += x[n*C+i] * w[j*C+i]
			}
			row[j] = float64(kernels.Round(rowDT, float32(s)))
			mx = math.Max(mx, row[j])
		}
		var sum float64
		for j := 0; j < V; j++ {
			sum += math.Exp(row[j] - mx)
		}
		ls[n] = math.Log(sum) - (row[t] - mx)
		if !grads {
			continue
		}
		for j := 0; j < V; j++ {
			g := math.Exp(row[j]-mx) / sum
			if j == t {
				g--
			}
			dl := float64(kernels.Round(rowDT, float32(g*float64(dloss))))
			for i := 0; i < C; i++ {
				di[n*C+i] += dl * w[j*C+i]
				dw[j*C+i] += dl * x[n*C+i]
			}
		}
	}
	put(losses, ls)
	if !lossSum.Nil() {
		acc := lossSum.Float64s()
		for _, l := range losses.Float32s()[:N] {
			acc[0] += float64(l)
		}
	}
	if !dinp.Nil() {
		put(dinp, di)
	}
	if !dweight.Nil() {
		accumulate(dweight, dw)
	}
}
