package cpu

import (
	"math"

	"gptkit/kernels/internal/check"
)

// attnBlock is the query-row block of attention: scores for attnBlock rows
// against every earlier key are one small GEMM, so the backward needs only an
// attnBlock×T scratch per worker (never a (B,NH,T,T) gradient buffer).
const attnBlock = 64

func checkAttention(op, outName string, out, att, qkv []float32, B, T, C, NH int) {
	check.Dims(op, B, T, C, NH)
	check.Heads(op, C, NH)
	check.Len(op, outName, out, B*T*C)
	check.Len(op, "att", att, B*NH*T*T)
	check.Len(op, "qkv", qkv, B*T*3*C)
}

// attnScratch is one worker's scratch for a head: two whole packed operands
// (the keys and values, packed once per head and shared by every row
// block's GEMMs), a packed-B panel for the GEMMs whose B changes per block,
// and an attnBlock×T block for the backward's score gradients.
type attnScratch struct {
	pk, pv []float32
	packed []float32
	block  []float32
}

func (be *Backend) attnScratch(w, T, hs int) attnScratch {
	nr := be.kernel.nr
	n1 := max(packBSize(hs, T, nr), packBSize(T, hs, nr)) // hs×T or T×hs
	n2 := ceilDiv(min(max(T, hs), gemmNC), nr) * nr * gemmKC
	buf := be.workBuf(w, 2*n1+n2+attnBlock*T)
	return attnScratch{pk: buf[:n1], pv: buf[n1 : 2*n1], packed: buf[2*n1 : 2*n1+n2], block: buf[2*n1+n2:]}
}

// prepack packs op(b) (K×N) whole when it fits one column block, else
// returns nil (the GEMMs then pack per call).
func prepack(dst []float32, b operand, K, N, nr int) *packedB {
	if N > gemmNC {
		return nil
	}
	pb := packBAll(dst, b, K, N, nr)
	return &pb
}

// AttentionForward implements kernels.Backend, one task per (batch, head):
// per block of query rows, scores = scale·Q·Kᵀ (GEMM into att), a causal
// softmax per row, then out = P·V (GEMM).
func (be *Backend) AttentionForward(out, att []float32, qkv []float32, B, T, C, NH int) {
	checkAttention("attention forward", "out", out, att, qkv, B, T, C, NH)
	be.mu.Lock()
	defer be.mu.Unlock()
	hs := C / NH
	scale := float32(1 / math.Sqrt(float64(hs)))
	C3 := 3 * C
	nr := be.kernel.nr
	be.pool.run(B*NH, func(w, task int) {
		b, h := task/NH, task%NH
		sc := be.attnScratch(w, T, hs)
		s := &be.gemmScratch[w]
		q := qkv[b*T*C3+h*hs:]
		k := qkv[b*T*C3+C+h*hs:]
		v := qkv[b*T*C3+2*C+h*hs:]
		a := att[(b*NH+h)*T*T:][:T*T]
		o := out[b*T*C+h*hs:]
		kt := prepack(sc.pk, operand{x: k, ld: C3, trans: true}, hs, T, nr) // Kᵀ (hs×T)
		vp := prepack(sc.pv, operand{x: v, ld: C3}, T, hs, nr)              // V (T×hs)
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			gemmSerial(&gemmArgs{
				M: r1 - r0, N: r1, K: hs,
				a: operand{x: q[r0*C3:], ld: C3}, b: operand{x: k, ld: C3, trans: true}, bp: kt,
				c: a[r0*T:], ldc: T, alpha: scale, lowerC: true, diag: r0,
			}, be.kernel, s, sc.packed)
			for t := r0; t < r1; t++ {
				row := a[t*T:][:T]
				m := vecMax(row[:t+1])
				sum := expShift(row[:t+1], m)
				vecScale(row[:t+1], 1/sum)
				clear(row[t+1:])
			}
			gemmSerial(&gemmArgs{
				M: r1 - r0, N: hs, K: r1,
				a: operand{x: a[r0*T:], ld: T}, b: operand{x: v, ld: C3}, bp: vp,
				c: o[r0*C:], ldc: C, alpha: 1, lowerA: true, diag: r0,
			}, be.kernel, s, sc.packed)
		}
	})
}

// AttentionBackward implements kernels.Backend, one task per (batch, head):
// per block of query rows, dP = dO·Vᵀ, dS = P⊙(dP - rowsum(P⊙dP)) in an
// attnBlock×T scratch, then dQ += scale·dS·K, dK += scale·dSᵀ·Q and
// dV += Pᵀ·dO (GEMMs accumulating straight into dqkv).
func (be *Backend) AttentionBackward(dqkv []float32, dout, qkv, att []float32, B, T, C, NH int) {
	checkAttention("attention backward", "dout", dout, att, qkv, B, T, C, NH)
	check.Len("attention backward", "dqkv", dqkv, B*T*3*C)
	be.mu.Lock()
	defer be.mu.Unlock()
	hs := C / NH
	scale := float32(1 / math.Sqrt(float64(hs)))
	C3 := 3 * C
	nr := be.kernel.nr
	be.pool.run(B*NH, func(w, task int) {
		b, h := task/NH, task%NH
		sc := be.attnScratch(w, T, hs)
		s := &be.gemmScratch[w]
		q := qkv[b*T*C3+h*hs:]
		k := qkv[b*T*C3+C+h*hs:]
		v := qkv[b*T*C3+2*C+h*hs:]
		dq := dqkv[b*T*C3+h*hs:]
		dk := dqkv[b*T*C3+C+h*hs:]
		dv := dqkv[b*T*C3+2*C+h*hs:]
		a := att[(b*NH+h)*T*T:][:T*T]
		do := dout[b*T*C+h*hs:]
		vt := prepack(sc.pv, operand{x: v, ld: C3, trans: true}, hs, T, nr) // Vᵀ (hs×T)
		kp := prepack(sc.pk, operand{x: k, ld: C3}, T, hs, nr)              // K (T×hs)
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			R := r1 - r0
			ds := sc.block[:R*r1]
			gemmSerial(&gemmArgs{
				M: R, N: r1, K: hs,
				a: operand{x: do[r0*C:], ld: C}, b: operand{x: v, ld: C3, trans: true}, bp: vt,
				c: ds, ldc: r1, alpha: 1, lowerC: true, diag: r0,
			}, be.kernel, s, sc.packed)
			for t := r0; t < r1; t++ {
				p := a[t*T:][:t+1]
				d := ds[(t-r0)*r1:][:r1]
				softmaxBackward(d[:t+1], p, dot(p, d[:t+1]))
				clear(d[t+1:])
			}
			gemmSerial(&gemmArgs{
				M: R, N: hs, K: r1,
				a: operand{x: ds, ld: r1}, b: operand{x: k, ld: C3}, bp: kp,
				c: dq[r0*C3:], ldc: C3, alpha: scale, accumulate: true, lowerA: true, diag: r0,
			}, be.kernel, s, sc.packed)
			gemmSerial(&gemmArgs{
				M: r1, N: hs, K: R,
				a: operand{x: ds, ld: r1, trans: true}, b: operand{x: q[r0*C3:], ld: C3},
				c: dk, ldc: C3, alpha: scale, accumulate: true, upperA: true, diag: r0,
			}, be.kernel, s, sc.packed)
			gemmSerial(&gemmArgs{
				M: r1, N: hs, K: R,
				a: operand{x: a[r0*T:], ld: T, trans: true}, b: operand{x: do[r0*C:], ld: C},
				c: dv, ldc: C3, alpha: 1, accumulate: true, upperA: true, diag: r0,
			}, be.kernel, s, sc.packed)
		}
	})
}

// softmaxBackwardGo: d = p·(d - dot).
func softmaxBackwardGo(d, p []float32, dot float32) {
	p = p[:len(d)]
	for i := range d {
		d[i] = p[i] * (d[i] - dot)
	}
}
