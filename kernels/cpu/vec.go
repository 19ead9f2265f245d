package cpu

import "math"

// Portable versions of the vector loops. vec_amd64.go routes the hot ones to
// assembly when the CPU has AVX2 and FMA; vec_generic.go (noasm, other
// architectures) uses these directly.

func vecAddGo(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

func vecAccGo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

func vecScaleGo(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// sumSquaresGo: Σx² in float64 over 4 interleaved accumulators (lane i%4),
// combined as (s0+s1)+(s2+s3): the order the assembly uses too.
func sumSquaresGo(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * float64(x[i])
		s1 += float64(x[i+1]) * float64(x[i+1])
		s2 += float64(x[i+2]) * float64(x[i+2])
		s3 += float64(x[i+3]) * float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

const geluK = 0.7978845608028654 // √(2/π)

func geluForwardGo(out, inp []float32) {
	inp = inp[:len(out)]
	for i, x := range inp {
		x64 := float64(x)
		out[i] = float32(0.5 * x64 * (1 + math.Tanh(geluK*(x64+0.044715*x64*x64*x64))))
	}
}

func geluBackwardGo(dinp, inp, dout []float32) {
	inp, dout = inp[:len(dinp)], dout[:len(dinp)]
	for i, x := range inp {
		x64 := float64(x)
		th := math.Tanh(geluK * (x64 + 0.044715*x64*x64*x64))
		g := 0.5*(1+th) + 0.5*x64*(1-th*th)*geluK*(1+3*0.044715*x64*x64)
		dinp[i] += float32(g) * dout[i]
	}
}

// geluGradMulGo: d = gelu'(pre)·d, as geluBackwardGo computes the product.
func geluGradMulGo(d, pre []float32) {
	pre = pre[:len(d)]
	for i, x := range pre {
		x64 := float64(x)
		th := math.Tanh(geluK * (x64 + 0.044715*x64*x64*x64))
		g := 0.5*(1+th) + 0.5*x64*(1-th*th)*geluK*(1+3*0.044715*x64*x64)
		d[i] = float32(g) * d[i]
	}
}

// expShiftGo: x[i] = exp(x[i] - m); returns Σ x[i] (float32, in order).
func expShiftGo(x []float32, m float32) float32 {
	var s float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		s += e
	}
	return s
}

func maxGo(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// vecAxpyGo: y += a·x.
func vecAxpyGo(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
