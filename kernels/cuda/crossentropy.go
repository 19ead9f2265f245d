package cuda

import "gptkit/kernels/internal/check"

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

// ceThreads is the block size of the cross-entropy kernels (one block per row of
// up to 50304 columns).
const ceThreads = 512

// CrossEntropyForward implements kernels.Backend.
func (b *Backend) CrossEntropyForward(losses, probs []float32, logits []float32, targets []int32, N, V, Vp int) {
	const op = "crossentropy forward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "losses", losses, N)
	check.Len(op, "logits", logits, N*Vp)
	b.enter()
	defer b.leave()
	t := b.copyIDs(scrIDs, targets[:N])
	b.launch("crossentropy_forward", dims{gx: uint32(N), bx: ceThreads}, dp(losses), dp(probs), dp(logits), t, int32(N), int32(V), int32(Vp))
}

// CrossEntropyBackward implements kernels.Backend.
func (b *Backend) CrossEntropyBackward(dlogits []float32, probs []float32, targets []int32, dloss float32, N, V, Vp int) {
	const op = "crossentropy backward"
	checkCE(op, probs, targets, N, V, Vp)
	check.Len(op, "dlogits", dlogits, N*Vp)
	b.enter()
	defer b.leave()
	t := b.copyIDs(scrIDs, targets[:N])
	b.launch("crossentropy_backward", dims{gx: uint32(N), bx: ceThreads}, dp(dlogits), dp(probs), t, dloss, int32(N), int32(V), int32(Vp))
}
