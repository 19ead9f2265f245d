package ref

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

// CrossEntropyForward: probs (N,Vp) = softmax of the first V logits of each row
// (padding columns 0), losses (N) = -log p[target] (0 for target < 0). The loss
// is computed as logsumexp - logit, in float64, so it stays finite when the
// float32 probability underflows.
func (Backend) CrossEntropyForward(losses, probs []float32, logits []float32, targets []int32, N, V, Vp int) {
	const op = "crossentropy forward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "losses", losses, N)
	check.Len(op, "logits", logits, N*Vp)
	for n := 0; n < N; n++ {
		l := logits[n*Vp:][:V]
		mx := math.Inf(-1)
		for _, v := range l {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range l {
			sum += math.Exp(float64(v) - mx)
		}
		p := probs[n*Vp:][:Vp]
		for i, v := range l {
			p[i] = float32(math.Exp(float64(v)-mx) / sum)
		}
		clear(p[V:])
		if t := targets[n]; t >= 0 {
			losses[n] = float32(math.Log(sum) - (float64(l[t]) - mx))
		} else {
			losses[n] = 0
		}
	}
}

// CrossEntropyBackward: dlogits += (probs - onehot(target))·dloss on rows with a
// target, columns < V.
func (Backend) CrossEntropyBackward(dlogits []float32, probs []float32, targets []int32, dloss float32, N, V, Vp int) {
	const op = "crossentropy backward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "dlogits", dlogits, N*Vp)
	for n := 0; n < N; n++ {
		t := int(targets[n])
		if t < 0 {
			continue
		}
		p := probs[n*Vp:][:V]
		d := dlogits[n*Vp:][:V]
		for i := range p {
			ind := float32(0)
			if i == t {
				ind = 1
			}
			d[i] += (p[i] - ind) * dloss
		}
	}
}
