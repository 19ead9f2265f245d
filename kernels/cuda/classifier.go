package cuda

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Classifier implements kernels.Backend, chunk by chunk of rows (as many as the
// logits scratch holds): the logits GEMM into the chunk (all Vp columns), the row
// kernel (loss over the first V, dlogits in place, 0 in the padded columns), then
// the dinp GEMM (written) and the dweight GEMM (accumulated) over the Vp columns;
// the loss sum last, in row order. The GEMMs run over Vp, not V, as llm.c's do: on
// an H200 (2026-11-27) cuBLASLt ran GPT-2's logits and dinp products at 95 and
// 126 TFLOP/s with m or k = 50257, a third of the training step; the padded
// columns' zero gradients add nothing to dinp and dweight, and their logits
// (from the weight's padded rows) are never read.
func (b *Backend) Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets kernels.Tensor, dloss float32, N, C, V, Vp int) {
	const op = "classifier"
	check.Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets, N, C, V, Vp)
	b.owned(op, losses, lossSum, dinp, dweight, logits, inp, weight, targets)
	dt := sameType(op, logits, inp, weight, dinp)
	b.enter()
	defer b.leave()
	b.checkTargets(op, targets, N, V)
	rows := min(N, logits.Len()/Vp)
	grads := int32(0)
	if !dinp.Nil() || !dweight.Nil() {
		grads = 1
	}
	for n0 := 0; n0 < N; n0 += rows {
		R := min(rows, N-n0)
		x := inp.Slice(n0*C, (n0+R)*C)
		var d kernels.Tensor
		if !dinp.Nil() {
			d = dinp.Slice(n0*C, (n0+R)*C)
		}
		gl, gi, gw := classifierGemms(logits.Addr(), x.Addr(), weight.Addr(), d.Addr(), dweight.Addr(), R, C, Vp)
		b.gemm(typed(gl, weight, x, logits))
		b.launch(kname("classifier_rows", dt), dims{gx: uint32(R), bx: 1024}, logits, losses.Slice(n0, n0+R),
			targets.Slice(n0, n0+R), dloss, int32(V), int32(Vp), grads)
		if !d.Nil() {
			b.gemm(typed(gi, weight, logits, d))
		}
		if !dweight.Nil() {
			b.gemm(typed(gw, x, logits, dweight))
		}
	}
	if !lossSum.Nil() {
		b.launch("loss_sum", dims{gx: 1, bx: 32}, lossSum, losses, int32(N))
	}
}

// checkTargets panics on a target ≥ V when the targets' host copy is at hand.
func (b *Backend) checkTargets(op string, targets kernels.Tensor, n, V int) {
	for addr, ids := range b.mem.idMirror {
		if a := targets.Addr(); a >= addr && a+uintptr(4*n) <= addr+uintptr(4*len(ids)) {
			off := int(a-addr) / 4
			check.Targets(op, ids[off:off+n], V)
			return
		}
	}
}

// classifierGemms are the classifier's products over a chunk of R rows:
// logits (R, Vp) = x·weightᵀ; dinp (R, C) = dlogits (R, Vp)·weight (written);
// dweight (Vp, C) += dlogitsᵀ·x (dlogits 0 in the padded columns).
func classifierGemms(logits, x, w, dinp, dw uintptr, R, C, Vp int) (gl, gi, gw gemm) {
	gl = gemm{transA: true, m: Vp, n: R, k: C, alpha: 1, A: w, lda: C, B: x, ldb: C, C: logits, ldc: Vp, batch: 1}
	gi = gemm{m: C, n: R, k: Vp, alpha: 1, A: w, lda: C, B: logits, ldb: Vp, C: dinp, ldc: C, batch: 1}
	gw = gemm{transB: true, m: C, n: Vp, k: R, alpha: 1, beta: 1, A: x, lda: C, B: logits, ldb: Vp, C: dw, ldc: C, batch: 1}
	return gl, gi, gw
}
