package ref

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// scores returns the scaled scores of query row t of head (b,h) against keys
// 0..t.
func scores(qkv []float64, b, h, t, T, C, hs int) []float64 {
	scale := 1 / math.Sqrt(float64(hs))
	q := qkv[(b*T+t)*3*C+h*hs:][:hs]
	s := make([]float64, t+1)
	for u := 0; u <= t; u++ {
		k := qkv[(b*T+u)*3*C+C+h*hs:][:hs]
		var d float64
		for i := range q {
			d += q[i] * k[i]
		}
		s[u] = d * scale
	}
	return s
}

// AttentionForward: causal multi-head attention over qkv (B,T,3C): out (B,T,C)
// the heads' outputs, lse (B,NH,T) each row's logsumexp of scaled scores.
func (Backend) AttentionForward(out, lse, qkv kernels.Tensor, B, T, C, NH int) {
	check.Attention("attention forward", out, lse, qkv, B, T, C, NH)
	check.Host("attention forward", out, lse, qkv)
	hs := C / NH
	x := vals(qkv, B*T*3*C)
	o := make([]float64, B*T*C)
	l := make([]float64, B*NH*T)
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			for t := 0; t < T; t++ {
				s := scores(x, b, h, t, T, C, hs)
				mx := math.Inf(-1)
				for _, v := range s {
					mx = math.Max(mx, v)
				}
				var sum float64
				for _, v := range s {
					sum += math.Exp(v - mx)
				}
				l[(b*NH+h)*T+t] = mx + math.Log(sum)
				for u, v := range s {
					p := math.Exp(v-mx) / sum
					for i := 0; i < hs; i++ {
						o[(b*T+t)*C+h*hs+i] += p * x[(b*T+u)*3*C+2*C+h*hs+i]
					}
				}
			}
		}
	}
	put(out, o)
	put(lse, l)
}

// AttentionBackward writes dqkv (B,T,3C) from dout (B,T,C), FlashAttention-2's
// way: the probabilities P = exp(S - lse) are recomputed from q, k and the saved
// lse; D = rowsum(dout ⊙ out); dS = P ⊙ (dout·vᵀ - D); dq = scale·dS·k,
// dk = scale·dSᵀ·q, dv = Pᵀ·dout. With 16-bit activations, P and dS enter their
// products rounded to that dtype, as they enter a GPU's tensor cores.
func (Backend) AttentionBackward(dqkv, dout, qkv, out, lse kernels.Tensor, B, T, C, NH int) {
	check.AttentionBackward(dqkv, dout, qkv, out, lse, B, T, C, NH)
	check.Host("attention backward", dqkv, dout, qkv, out, lse)
	hs := C / NH
	scale := 1 / math.Sqrt(float64(hs))
	dt := qkv.DType()
	rnd := func(x float64) float64 { return float64(kernels.Round(dt, float32(x))) }
	x, d, y, l := vals(qkv, B*T*3*C), vals(dout, B*T*C), vals(out, B*T*C), vals(lse, B*NH*T)
	dx := make([]float64, B*T*3*C)
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			for t := 0; t < T; t++ {
				s := scores(x, b, h, t, T, C, hs)
				do := d[(b*T+t)*C+h*hs:][:hs]
				var D float64
				for i := 0; i < hs; i++ {
					D += do[i] * y[(b*T+t)*C+h*hs+i]
				}
				q := x[(b*T+t)*3*C+h*hs:][:hs]
				for u := range s {
					p := math.Exp(s[u] - l[(b*NH+h)*T+t])
					k := x[(b*T+u)*3*C+C+h*hs:][:hs]
					v := x[(b*T+u)*3*C+2*C+h*hs:][:hs]
					var dp float64
					for i := 0; i < hs; i++ {
						dp += do[i] * v[i]
					}
					ds := rnd(p*(dp-D)) * scale
					p = rnd(p)
					for i := 0; i < hs; i++ {
						dx[(b*T+u)*3*C+2*C+h*hs+i] += p * do[i] // dv
						dx[(b*T+t)*3*C+h*hs+i] += ds * k[i]     // dq
						dx[(b*T+u)*3*C+C+h*hs+i] += ds * q[i]   // dk
					}
				}
			}
		}
	}
	put(dqkv, dx)
}
