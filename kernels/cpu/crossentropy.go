package cpu

import (
	"math"

	"gptkit/kernels/internal/check"
)

func checkCE(op string, probs []float32, targets []int32, N, V, Vp int) {
	check.Dims(op, N, V, Vp)
	check.Vocab(op, V, Vp)
	check.Len(op, "probs", probs, N*Vp)
	check.Ints(op, "targets", targets, N)
	for _, t := range targets[:N] {
		if int(t) >= V {
			panic("kernels: " + op + ": target ≥ V")
		}
	}
}

// CrossEntropyForward implements kernels.Backend, parallel over rows. The loss
// is log Σexp(l-max) - (l[target]-max), finite even when the float32
// probability underflows.
func (be *Backend) CrossEntropyForward(losses, probs []float32, logits []float32, targets []int32, N, V, Vp int) {
	const op = "crossentropy forward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "losses", losses, N)
	check.Len(op, "logits", logits, N*Vp)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(N, max(1, elementGrain/4/Vp), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			l := logits[n*Vp:][:V]
			p := probs[n*Vp:][:Vp]
			m := vecMax(l)
			copy(p, l)
			sum := expShift(p[:V], m)
			vecScale(p[:V], 1/sum)
			clear(p[V:])
			if t := targets[n]; t >= 0 {
				losses[n] = float32(math.Log(float64(sum)) - float64(l[t]-m))
			} else {
				losses[n] = 0
			}
		}
	})
}

// CrossEntropyBackward implements kernels.Backend, parallel over rows.
func (be *Backend) CrossEntropyBackward(dlogits []float32, probs []float32, targets []int32, dloss float32, N, V, Vp int) {
	const op = "crossentropy backward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "dlogits", dlogits, N*Vp)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(N, max(1, elementGrain/Vp), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			t := int(targets[n])
			if t < 0 {
				continue
			}
			d := dlogits[n*Vp:][:V]
			dt := d[t]
			vecAxpy(d, probs[n*Vp:][:V], dloss)
			d[t] = dt + (probs[n*Vp+t]-1)*dloss
		}
	})
}
