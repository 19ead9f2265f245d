package ref

import (
	"math"

	"gptkit/kernels/internal/check"
)

func checkAttention(op string, outName string, out, att, qkv []float32, B, T, C, NH int) {
	check.Dims(op, B, T, C, NH)
	check.Heads(op, C, NH)
	check.Len(op, outName, out, B*T*C)
	check.Len(op, "att", att, B*NH*T*T)
	check.Len(op, "qkv", qkv, B*T*3*C)
}

// AttentionForward: causal multi-head attention over qkv (B,T,3C); att
// (B,NH,T,T) gets the probabilities (zero past the diagonal), out (B,T,C) the
// heads' outputs.
func (Backend) AttentionForward(out, att []float32, qkv []float32, B, T, C, NH int) {
	checkAttention("attention forward", "out", out, att, qkv, B, T, C, NH)
	hs := C / NH
	scale := 1 / math.Sqrt(float64(hs))
	pre := make([]float64, T)
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			for t := 0; t < T; t++ {
				q := qkv[(b*T+t)*3*C+h*hs:][:hs]
				// Scores against keys 0..t, then a softmax over them.
				mx := math.Inf(-1)
				for t2 := 0; t2 <= t; t2++ {
					k := qkv[(b*T+t2)*3*C+C+h*hs:][:hs]
					var s float64
					for i := range q {
						s += float64(q[i]) * float64(k[i])
					}
					pre[t2] = s * scale
					mx = math.Max(mx, pre[t2])
				}
				var sum float64
				for t2 := 0; t2 <= t; t2++ {
					pre[t2] = math.Exp(pre[t2] - mx)
					sum += pre[t2]
				}
				a := att[((b*NH+h)*T+t)*T:][:T]
				for t2 := 0; t2 < T; t2++ {
					if t2 <= t {
						a[t2] = float32(pre[t2] / sum)
					} else {
						a[t2] = 0
					}
				}
				// out = Σ att·v, with the rounded probabilities the backward will see.
				o := out[(b*T+t)*C+h*hs:][:hs]
				for i := 0; i < hs; i++ {
					var s float64
					for t2 := 0; t2 <= t; t2++ {
						s += float64(a[t2]) * float64(qkv[(b*T+t2)*3*C+2*C+h*hs+i])
					}
					o[i] = float32(s)
				}
			}
		}
	}
}

// AttentionBackward accumulates into dqkv (B,T,3C) from dout (B,T,C).
func (Backend) AttentionBackward(dqkv []float32, dout, qkv, att []float32, B, T, C, NH int) {
	checkAttention("attention backward", "dout", dout, att, qkv, B, T, C, NH)
	check.Len("attention backward", "dqkv", dqkv, B*T*3*C)
	hs := C / NH
	scale := 1 / math.Sqrt(float64(hs))
	// Float64 accumulators for this (b,h): dq, dk, dv per position.
	dq := make([]float64, T*hs)
	dk := make([]float64, T*hs)
	dv := make([]float64, T*hs)
	datt := make([]float64, T)
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			clear(dq)
			clear(dk)
			clear(dv)
			for t := 0; t < T; t++ {
				a := att[((b*NH+h)*T+t)*T:][:T]
				do := dout[(b*T+t)*C+h*hs:][:hs]
				// datt = dout·v; dv += att·dout.
				for t2 := 0; t2 <= t; t2++ {
					v := qkv[(b*T+t2)*3*C+2*C+h*hs:][:hs]
					var s float64
					for i := 0; i < hs; i++ {
						s += float64(do[i]) * float64(v[i])
						dv[t2*hs+i] += float64(a[t2]) * float64(do[i])
					}
					datt[t2] = s
				}
				// Softmax backward: dpre = att·(datt - Σ att·datt).
				var dot float64
				for t2 := 0; t2 <= t; t2++ {
					dot += float64(a[t2]) * datt[t2]
				}
				q := qkv[(b*T+t)*3*C+h*hs:][:hs]
				for t2 := 0; t2 <= t; t2++ {
					dpre := float64(a[t2]) * (datt[t2] - dot) * scale
					k := qkv[(b*T+t2)*3*C+C+h*hs:][:hs]
					for i := 0; i < hs; i++ {
						dq[t*hs+i] += dpre * float64(k[i])
						dk[t2*hs+i] += dpre * float64(q[i])
					}
				}
			}
			for t := 0; t < T; t++ {
				row := dqkv[(b*T+t)*3*C:]
				for i := 0; i < hs; i++ {
					row[h*hs+i] += float32(dq[t*hs+i])
					row[C+h*hs+i] += float32(dk[t*hs+i])
					row[2*C+h*hs+i] += float32(dv[t*hs+i])
				}
			}
		}
	}
}
