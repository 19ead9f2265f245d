// Package ref is the reference kernels.Backend: plain, obvious loops in the
// style of llm.c's train_gpt2.c, single-threaded, written for reading rather
// than speed. It is the yardstick kernels/kerneltest measures every other
// backend against, and a fallback that works everywhere.
//
// Every operand is read in its dtype and widened to float64; every sum (dot
// products, row means and variances, softmax normalizers, reductions over rows
// for weight and bias gradients) is accumulated in float64, and each output is
// rounded once: to float32, then to its own dtype (bfloat16 or float16, to
// nearest even), which is what a GPU kernel computing in float32 stores. So ref
// is at least as accurate as any fast backend and its own rounding rarely
// dominates a comparison. Weight gradients are accumulated as
// grad += float32(sum): a whole reduction is added in one step.
//
// Transcendentals (exp, tanh, sqrt, log) are math's float64 functions.
package ref

import (
	"fmt"
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Backend is the reference backend; its zero value is ready to use.
type Backend struct{}

// New returns the reference backend.
func New() kernels.Backend { return Backend{} }

var _ kernels.Backend = Backend{}

// Name implements kernels.Backend.
func (Backend) Name() string { return "ref" }

// HostMemory implements kernels.HostMemory.
func (Backend) HostMemory() {}

// Alloc implements kernels.Backend: zeroed Go memory, 8-byte aligned.
func (be Backend) Alloc(what string, dt kernels.DType, n int) (kernels.Tensor, error) {
	if n < 0 {
		panic("kernels: alloc: negative size")
	}
	size := n * dt.Size()
	host := kernels.Float64Bytes(make([]float64, (size+7)/8))[:size]
	buf := kernels.NewBuffer(be, 0, host, size, what)
	return kernels.NewTensor(buf, dt, n), nil
}

// Free implements kernels.Backend: the garbage collector frees Go memory.
func (Backend) Free(kernels.Tensor) {}

// Upload implements kernels.Backend: a copy.
func (Backend) Upload(dst kernels.Tensor, src []byte) {
	check.Host("upload", dst)
	if len(src) != dst.Bytes() {
		panic(fmt.Sprintf("kernels: upload of %d bytes into %s", len(src), dst))
	}
	copy(dst.HostBytes(), src)
}

// Download implements kernels.Backend: a copy.
func (Backend) Download(dst []byte, src kernels.Tensor) {
	check.Host("download", src)
	if len(dst) != src.Bytes() {
		panic(fmt.Sprintf("kernels: download of %s into %d bytes", src, len(dst)))
	}
	copy(dst, src.HostBytes())
}

// Sync implements kernels.Backend (nothing to wait for).
func (Backend) Sync() {}

// vals returns the first n values of a host tensor widened to float64.
func vals(t kernels.Tensor, n int) []float64 {
	if t.Nil() {
		return nil
	}
	f := kernels.ReadFloat32(t.Slice(0, n))
	out := make([]float64, n)
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// put stores v into the first len(v) elements of t, each rounded to float32 and
// then to t's dtype.
func put(t kernels.Tensor, v []float64) {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	kernels.WriteFloat32(t.Slice(0, len(v)), f)
}

// accumulate adds float32(sums[i]) to t's first len(sums) elements, in float32.
func accumulate(t kernels.Tensor, sums []float64) {
	cur := kernels.ReadFloat32(t.Slice(0, len(sums)))
	for i, s := range sums {
		cur[i] += float32(s)
	}
	kernels.WriteFloat32(t.Slice(0, len(sums)), cur)
}

// DropoutForward: out = inp·mask·1/(1-p) with kernels.DropoutKeep's mask.
func (Backend) DropoutForward(out, inp kernels.Tensor, p float32, seed uint64) {
	const op = "dropout forward"
	n := check.Same(op, out, inp)
	check.Host(op, out, inp)
	x := kernels.ReadFloat32(inp.Slice(0, n))
	scale := kernels.DropoutScale(p)
	for i := range x {
		if kernels.DropoutKeep(seed, i, p) {
			x[i] *= scale
		} else {
			x[i] = 0
		}
	}
	kernels.WriteFloat32(out, x)
}

// DropoutBackward: dinp = dout·mask·1/(1-p).
func (be Backend) DropoutBackward(dinp, dout kernels.Tensor, p float32, seed uint64) {
	be.DropoutForward(dinp, dout, p, seed)
}

// AdamW implements kernels.Backend. The bias corrections 1-β^t are computed in
// float64 and rounded to float32; the update itself is float32 arithmetic in
// the order the interface documents.
func (Backend) AdamW(params, grads, m, v, cp, gradNorm kernels.Tensor, o kernels.AdamW) {
	n := check.AdamW(params, grads, m, v, cp, gradNorm, o)
	check.Host("adamw", params, grads, m, v, cp, gradNorm)
	scale, ok := kernels.GradientScale(gradNorm, o)
	if !ok {
		return // not finite: skip the step
	}
	P, G, M, V := params.Float32s(), grads.Float32s()[:n], m.Float32s()[:n], v.Float32s()[:n]
	bc1 := float32(1 - math.Pow(float64(o.Beta1), float64(o.Step)))
	bc2 := float32(1 - math.Pow(float64(o.Beta2), float64(o.Step)))
	for i := 0; i < n; i++ {
		g := G[i]
		if scale != 1 {
			g *= scale
		}
		wd := o.WeightDecay
		if i >= o.DecayLen {
			wd = 0
		}
		mi := o.Beta1*M[i] + (1-o.Beta1)*g
		vi := o.Beta2*V[i] + (1-o.Beta2)*g*g
		M[i], V[i] = mi, vi
		mhat := mi / bc1
		vhat := vi / bc2
		P[i] -= o.LR * (mhat/(float32(math.Sqrt(float64(vhat)))+o.Eps) + wd*P[i])
	}
	if !cp.Nil() {
		kernels.WriteFloat32(cp.Slice(0, n), P)
	}
}

// SumSquares: out[i] = Σx² over block i, in float64, left to right.
func (Backend) SumSquares(out, x kernels.Tensor, block int) {
	nb := check.SumSquares(out, x, block)
	check.Host("sumsquares", out, x)
	xs := kernels.ReadFloat32(x)
	o := out.Float64s()
	for b := 0; b < nb; b++ {
		var s float64
		for _, v := range xs[b*block : (b+1)*block] {
			s += float64(v) * float64(v)
		}
		o[b] = s
	}
}

// Convert: dst = src rounded to dst's dtype.
func (Backend) Convert(dst, src kernels.Tensor) {
	n := check.Same("convert", dst, src)
	check.Host("convert", dst, src)
	kernels.WriteFloat32(dst, kernels.ReadFloat32(src.Slice(0, n)))
}

// Zero: x = 0.
func (Backend) Zero(x kernels.Tensor) {
	check.Host("zero", x)
	clear(x.HostBytes())
}
