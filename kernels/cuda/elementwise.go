package cuda

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// GeluForward implements kernels.Backend.
func (b *Backend) GeluForward(out, inp []float32) {
	n := check.Same("gelu forward", out, inp)
	b.elementwise("gelu_forward", n, dp(out), dp(inp))
}

// GeluBackward implements kernels.Backend.
func (b *Backend) GeluBackward(dinp, inp, dout []float32) {
	n := check.Same("gelu backward", dinp, inp, dout)
	b.elementwise("gelu_backward", n, dp(dinp), dp(inp), dp(dout))
}

// ResidualForward implements kernels.Backend.
func (b *Backend) ResidualForward(out, x, y []float32) {
	n := check.Same("residual forward", out, x, y)
	b.elementwise("residual_forward", n, dp(out), dp(x), dp(y))
}

// ResidualBackward implements kernels.Backend.
func (b *Backend) ResidualBackward(da, db, dout []float32) {
	n := check.Same("residual backward", da, db, dout)
	b.elementwise("residual_backward", n, dp(da), dp(db), dp(dout))
}

// DropoutForward implements kernels.Backend with kernels.DropoutBits transcribed
// to the device, so the mask is the CPU backends' to the bit.
func (b *Backend) DropoutForward(out, inp []float32, p float32, seed uint64) {
	n := check.Same("dropout forward", out, inp)
	th, s := kernels.DropoutThreshold(p), kernels.DropoutScale(p)
	b.elementwise("dropout_forward", n, dp(out), dp(inp), seed, th, s)
}

// DropoutBackward implements kernels.Backend.
func (b *Backend) DropoutBackward(dinp, dout []float32, p float32, seed uint64) {
	n := check.Same("dropout backward", dinp, dout)
	th, s := kernels.DropoutThreshold(p), kernels.DropoutScale(p)
	b.elementwise("dropout_backward", n, dp(dinp), dp(dout), seed, th, s)
}

// Scale implements kernels.Backend.
func (b *Backend) Scale(x []float32, s float32) {
	b.elementwise("scale_inplace", len(x), dp(x), s)
}

// Zero implements kernels.Backend.
func (b *Backend) Zero(x []float32) {
	if len(x) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.must(b.drv.memsetD32(dp(x), 0, len(x), b.stream))
}

// elementwise launches a grid-stride kernel over n elements whose last argument
// is n (long long); nothing for n = 0.
func (b *Backend) elementwise(name string, n int, args ...any) {
	if n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.launch(name, b.elems(n), append(args, int64(n))...)
}
