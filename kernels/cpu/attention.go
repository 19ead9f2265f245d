package cpu

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// attnBlock is the query-row block of attention. A block's scores against
// every earlier key are one small GEMM into an attnBlock×T scratch per worker:
// FlashAttention's blocking over queries, with whole rows of keys (a CPU core's
// cache holds them), so the softmax of a row needs no online rescaling. Only
// the rows' logsumexp is saved; the backward recomputes the probabilities.
const attnBlock = 64

// attnScratch is one worker's scratch for a head: whole packed operands (the
// keys and values, packed once per head and shared by every row block's GEMMs;
// the backward packs the keys twice, transposed and not), a packed-B panel for the GEMMs whose B changes per block, and two
// attnBlock×T blocks (scores or probabilities, and their gradient).
type attnScratch struct {
	pk, pv, pk2 []float32
	packed      []float32
	block, dp   []float32
}

func (be *Backend) attnScratch(w, T, hs int) attnScratch {
	nr := be.kernel.nr
	n1 := max(packBSize(hs, T, nr), packBSize(T, hs, nr)) // hs×T or T×hs
	n2 := ceilDiv(min(max(T, hs), gemmNC), nr) * nr * gemmKC
	nb := attnBlock * T
	buf := be.workBuf(w, 3*n1+n2+2*nb)
	return attnScratch{pk: buf[:n1], pv: buf[n1 : 2*n1], pk2: buf[2*n1 : 3*n1], packed: buf[3*n1 : 3*n1+n2],
		block: buf[3*n1+n2:][:nb], dp: buf[3*n1+n2+nb:][:nb]}
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
// per block of query rows, scores = scale·Q·Kᵀ (GEMM into scratch), the causal
// softmax per row (its logsumexp saved), then out = P·V (GEMM).
func (be *Backend) AttentionForward(out, lse, qkv kernels.Tensor, B, T, C, NH int) {
	check.Attention("attention forward", out, lse, qkv, B, T, C, NH)
	check.Host("attention forward", out, lse, qkv)
	be.mu.Lock()
	defer be.mu.Unlock()
	hs := C / NH
	scale := float32(1 / math.Sqrt(float64(hs)))
	C3 := 3 * C
	nr := be.kernel.nr
	x := be.in(qkv, B*T*C3, slotA)
	y := be.out(out, B*T*C, slotB)
	l := lse.Float32s()
	be.pool.run(B*NH, func(w, task int) {
		b, h := task/NH, task%NH
		sc := be.attnScratch(w, T, hs)
		s := &be.gemmScratch[w]
		q := x[b*T*C3+h*hs:]
		k := x[b*T*C3+C+h*hs:]
		v := x[b*T*C3+2*C+h*hs:]
		o := y[b*T*C+h*hs:]
		ls := l[(b*NH+h)*T:][:T]
		kt := prepack(sc.pk, operand{x: k, ld: C3, trans: true}, hs, T, nr) // Kᵀ (hs×T)
		vp := prepack(sc.pv, operand{x: v, ld: C3}, T, hs, nr)              // V (T×hs)
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			p := sc.block[:(r1-r0)*r1]
			gemmSerial(&gemmArgs{
				M: r1 - r0, N: r1, K: hs,
				a: operand{x: q[r0*C3:], ld: C3}, b: operand{x: k, ld: C3, trans: true}, bp: kt,
				c: p, ldc: r1, alpha: scale, lowerC: true, diag: r0,
			}, be.kernel, s, sc.packed)
			for t := r0; t < r1; t++ {
				row := p[(t-r0)*r1:][:r1]
				m := vecMax(row[:t+1])
				sum := expShift(row[:t+1], m)
				ls[t] = m + float32(math.Log(float64(sum)))
				vecScale(row[:t+1], 1/sum)
				clear(row[t+1:])
			}
			gemmSerial(&gemmArgs{
				M: r1 - r0, N: hs, K: r1,
				a: operand{x: p, ld: r1}, b: operand{x: v, ld: C3}, bp: vp,
				c: o[r0*C:], ldc: C, alpha: 1, lowerA: true, diag: r0,
			}, be.kernel, s, sc.packed)
		}
	})
	be.store(out, y)
}

// AttentionBackward implements kernels.Backend, one task per (batch, head):
// per block of query rows, the probabilities P = exp(scale·Q·Kᵀ - lse)
// recomputed (GEMM, then exp), dP = dO·Vᵀ, dS = P⊙(dP - rowsum(dO⊙O)), then
// dQ = scale·dS·K (written), dK += scale·dSᵀ·Q and dV += Pᵀ·dO (GEMMs
// accumulating over the blocks into the head's zeroed columns of dqkv). With
// 16-bit activations P and dS are rounded to that dtype for their GEMMs.
func (be *Backend) AttentionBackward(dqkv, dout, qkv, out, lse kernels.Tensor, B, T, C, NH int) {
	check.AttentionBackward(dqkv, dout, qkv, out, lse, B, T, C, NH)
	check.Host("attention backward", dqkv, dout, qkv, out, lse)
	be.mu.Lock()
	defer be.mu.Unlock()
	hs := C / NH
	scale := float32(1 / math.Sqrt(float64(hs)))
	C3 := 3 * C
	nr := be.kernel.nr
	x, d, y := be.in(qkv, B*T*C3, slotA), be.in(dout, B*T*C, slotB), be.in(out, B*T*C, slotC)
	dx := be.out(dqkv, B*T*C3, slotD)
	dt := qkv.DType()
	l := lse.Float32s()
	be.pool.run(B*NH, func(w, task int) {
		b, h := task/NH, task%NH
		sc := be.attnScratch(w, T, hs)
		s := &be.gemmScratch[w]
		q := x[b*T*C3+h*hs:]
		k := x[b*T*C3+C+h*hs:]
		v := x[b*T*C3+2*C+h*hs:]
		dq := dx[b*T*C3+h*hs:]
		dk := dx[b*T*C3+C+h*hs:]
		dv := dx[b*T*C3+2*C+h*hs:]
		do := d[b*T*C+h*hs:]
		o := y[b*T*C+h*hs:]
		ls := l[(b*NH+h)*T:][:T]
		for t := 0; t < T; t++ {
			clear(dk[t*C3:][:hs])
			clear(dv[t*C3:][:hs])
		}
		kt := prepack(sc.pk, operand{x: k, ld: C3, trans: true}, hs, T, nr) // Kᵀ (hs×T)
		vt := prepack(sc.pv, operand{x: v, ld: C3, trans: true}, hs, T, nr) // Vᵀ (hs×T)
		kp := prepack(sc.pk2, operand{x: k, ld: C3}, T, hs, nr)             // K (T×hs)
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			R := r1 - r0
			p, ds := sc.block[:R*r1], sc.dp[:R*r1]
			gemmSerial(&gemmArgs{
				M: R, N: r1, K: hs,
				a: operand{x: q[r0*C3:], ld: C3}, b: operand{x: k, ld: C3, trans: true}, bp: kt,
				c: p, ldc: r1, alpha: scale, lowerC: true, diag: r0,
			}, be.kernel, s, sc.packed)
			gemmSerial(&gemmArgs{
				M: R, N: r1, K: hs,
				a: operand{x: do[r0*C:], ld: C}, b: operand{x: v, ld: C3, trans: true}, bp: vt,
				c: ds, ldc: r1, alpha: 1, lowerC: true, diag: r0,
			}, be.kernel, s, sc.packed)
			for t := r0; t < r1; t++ {
				pr := p[(t-r0)*r1:][:r1]
				expShift(pr[:t+1], ls[t])
				clear(pr[t+1:])
				dr := ds[(t-r0)*r1:][:r1]
				softmaxBackward(dr[:t+1], pr[:t+1], dot(do[t*C:][:hs], o[t*C:][:hs]))
				clear(dr[t+1:])
				if dt != kernels.Float32 { // P and dS enter their products rounded, as on tensor cores
					for i := range pr[:t+1] {
						pr[i], dr[i] = kernels.Round(dt, pr[i]), kernels.Round(dt, dr[i])
					}
				}
			}
			gemmSerial(&gemmArgs{
				M: R, N: hs, K: r1,
				a: operand{x: ds, ld: r1}, b: operand{x: k, ld: C3}, bp: kp,
				c: dq[r0*C3:], ldc: C3, alpha: scale, lowerA: true, diag: r0,
			}, be.kernel, s, sc.packed)
			gemmSerial(&gemmArgs{
				M: r1, N: hs, K: R,
				a: operand{x: ds, ld: r1, trans: true}, b: operand{x: q[r0*C3:], ld: C3},
				c: dk, ldc: C3, alpha: scale, accumulate: true, upperA: true, diag: r0,
			}, be.kernel, s, sc.packed)
			gemmSerial(&gemmArgs{
				M: r1, N: hs, K: R,
				a: operand{x: p, ld: r1, trans: true}, b: operand{x: do[r0*C:], ld: C},
				c: dv, ldc: C3, alpha: 1, accumulate: true, upperA: true, diag: r0,
			}, be.kernel, s, sc.packed)
		}
	})
	be.store(dqkv, dx)
}

// softmaxBackwardGo: d = p·(d - dot).
func softmaxBackwardGo(d, p []float32, dot float32) {
	p = p[:len(d)]
	for i := range d {
		d[i] = p[i] * (d[i] - dot)
	}
}
