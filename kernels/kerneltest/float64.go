package kerneltest

import (
	"math"

	"gptkit/kernels"
)

// Float64 forwards: the definitions, written independently of ref, that the
// gradient checks differentiate numerically.

func encoder64(wte, wpe []float64, inp []int32, B, T, C int) []float64 {
	out := make([]float64, B*T*C)
	for bt := 0; bt < B*T; bt++ {
		t := bt % T
		for i := 0; i < C; i++ {
			out[bt*C+i] = wte[int(inp[bt])*C+i] + wpe[t*C+i]
		}
	}
	return out
}

func layernorm64(inp, w, b []float64, N, C int) []float64 {
	out := make([]float64, N*C)
	for n := 0; n < N; n++ {
		x := inp[n*C : (n+1)*C]
		var m, v float64
		for _, xi := range x {
			m += xi
		}
		m /= float64(C)
		for _, xi := range x {
			v += (xi - m) * (xi - m)
		}
		v /= float64(C)
		for i, xi := range x {
			out[n*C+i] = (xi - m) / math.Sqrt(v+1e-5) * w[i]
			if b != nil {
				out[n*C+i] += b[i]
			}
		}
	}
	return out
}

func matmul64(inp, w, b []float64, N, C, OC int) []float64 {
	out := make([]float64, N*OC)
	for n := 0; n < N; n++ {
		for o := 0; o < OC; o++ {
			var s float64
			if b != nil {
				s = b[o]
			}
			for i := 0; i < C; i++ {
				s += inp[n*C+i] * w[o*C+i]
			}
			out[n*OC+o] = s
		}
	}
	return out
}

func attention64(qkv []float64, B, T, C, NH int) []float64 {
	hs := C / NH
	out := make([]float64, B*T*C)
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			for t := 0; t < T; t++ {
				s := make([]float64, t+1)
				mx := math.Inf(-1)
				for u := 0; u <= t; u++ {
					for i := 0; i < hs; i++ {
						s[u] += qkv[(b*T+t)*3*C+h*hs+i] * qkv[(b*T+u)*3*C+C+h*hs+i]
					}
					s[u] /= math.Sqrt(float64(hs))
					mx = math.Max(mx, s[u])
				}
				var z float64
				for u := range s {
					s[u] = math.Exp(s[u] - mx)
					z += s[u]
				}
				for u := range s {
					for i := 0; i < hs; i++ {
						out[(b*T+t)*C+h*hs+i] += s[u] / z * qkv[(b*T+u)*3*C+2*C+h*hs+i]
					}
				}
			}
		}
	}
	return out
}

func gelu64(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	return out
}

func dropout64(x []float64, p float32, seed uint64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		if kernels.DropoutKeep(seed, i, p) {
			out[i] = v / (1 - float64(p))
		}
	}
	return out
}

// classifier64 returns the per-row losses of logits = inp·wᵀ (0 for ignored
// rows): logsumexp over the first V logits minus the target's.
func classifier64(inp, w []float64, targets []int32, N, C, V int) []float64 {
	losses := make([]float64, N)
	l := make([]float64, V)
	for n := 0; n < N; n++ {
		if targets[n] < 0 {
			continue
		}
		mx := math.Inf(-1)
		for j := range l {
			l[j] = 0
			for i := 0; i < C; i++ {
				l[j] += inp[n*C+i] * w[j*C+i]
			}
			mx = math.Max(mx, l[j])
		}
		var z float64
		for _, v := range l {
			z += math.Exp(v - mx)
		}
		losses[n] = math.Log(z) + mx - l[targets[n]]
	}
	return losses
}
