package cpu

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Classifier implements kernels.Backend, chunk by chunk of rows (as many as the
// logits scratch holds): logits = inp·weightᵀ over the first V columns (a GEMM
// into the chunk), the loss and dlogits row by row in parallel in place, then
// dinp = dlogits·weight (a GEMM that writes) and dweight += dlogitsᵀ·inp (an
// accumulating GEMM) over those V rows. With 16-bit logits, the logits and
// dlogits are rounded to that dtype before they are used, as a GPU stores them.
func (be *Backend) Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets kernels.Tensor, dloss float32, N, C, V, Vp int) {
	check.Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets, N, C, V, Vp)
	check.Host("classifier", losses, lossSum, dinp, dweight, logits, inp, weight, targets)
	tg := targets.Int32s()[:N]
	check.Targets("classifier", tg, V)
	be.mu.Lock()
	defer be.mu.Unlock()
	rows := min(N, logits.Len()/Vp)
	x, w := be.in(inp, N*C, slotA), be.in(weight, Vp*C, slotB)
	lg := be.out(logits, rows*Vp, slotC)
	dt := logits.DType()
	grads := !dinp.Nil() || !dweight.Nil()
	di := be.out(dinp, N*C, slotD)
	ls := losses.Float32s()
	for n0 := 0; n0 < N; n0 += rows {
		R := min(rows, N-n0)
		be.gemm(&gemmArgs{
			M: R, N: V, K: C,
			a: operand{x: x[n0*C:], ld: C}, b: operand{x: w, ld: C, trans: true},
			c: lg, ldc: Vp, alpha: 1,
		})
		be.forChunks(R, max(1, elementGrain/4/V), func(lo, hi int) {
			for r := lo; r < hi; r++ {
				ls[n0+r] = lossRow(lg[r*Vp:][:V], int(tg[n0+r]), dloss, dt, grads)
			}
		})
		if !dinp.Nil() {
			be.gemm(&gemmArgs{
				M: R, N: C, K: V,
				a: operand{x: lg, ld: Vp}, b: operand{x: w, ld: C},
				c: di[n0*C:], ldc: C, alpha: 1,
			})
		}
		if !dweight.Nil() {
			be.gemm(&gemmArgs{
				M: V, N: C, K: R,
				a: operand{x: lg, ld: Vp, trans: true}, b: operand{x: x[n0*C:], ld: C},
				c: dweight.Float32s(), ldc: C, alpha: 1, accumulate: true,
			})
		}
	}
	be.store(dinp, di)
	if !lossSum.Nil() {
		acc := lossSum.Float64s()
		for _, l := range ls[:N] {
			acc[0] += float64(l)
		}
	}
}

// lossRow returns the cross-entropy of one row of logits l (the first V) for
// target t, log Σexp(l-max) - (l[t]-max), finite even when the float32
// probability underflows; with grads, it overwrites l with dlogits =
// (softmax - onehot(t))·dloss. An ignored row (t < 0) has loss 0 and zero
// dlogits. dt is the dtype the logits and dlogits are stored in.
func lossRow(l []float32, t int, dloss float32, dt kernels.DType, grads bool) float32 {
	if t < 0 {
		if grads {
			clear(l)
		}
		return 0
	}
	if dt != kernels.Float32 {
		for i, v := range l {
			l[i] = kernels.Round(dt, v)
		}
	}
	m := vecMax(l)
	lt := l[t]
	sum := expShift(l, m)
	loss := float32(math.Log(float64(sum)) - float64(lt-m))
	if grads {
		vecScale(l, dloss/sum)
		l[t] -= dloss
		if dt != kernels.Float32 {
			for i, v := range l {
				l[i] = kernels.Round(dt, v)
			}
		}
	}
	return loss
}
