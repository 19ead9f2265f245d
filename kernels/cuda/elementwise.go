package cuda

import (
	"fmt"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// DropoutForward implements kernels.Backend with kernels.DropoutBits transcribed
// to the device, so the mask is the CPU backends' to the bit.
func (b *Backend) DropoutForward(out, inp kernels.Tensor, p float32, seed uint64) {
	b.dropout("dropout forward", out, inp, p, seed)
}

// DropoutBackward implements kernels.Backend.
func (b *Backend) DropoutBackward(dinp, dout kernels.Tensor, p float32, seed uint64) {
	b.dropout("dropout backward", dinp, dout, p, seed)
}

func (b *Backend) dropout(op string, out, inp kernels.Tensor, p float32, seed uint64) {
	n := check.Same(op, out, inp)
	b.owned(op, out, inp)
	dt := sameType(op, out, inp)
	th, s := kernels.DropoutThreshold(p), kernels.DropoutScale(p)
	b.elementwise(kname("dropout", dt), n, out, inp, seed, th, s)
}

// Convert implements kernels.Backend.
func (b *Backend) Convert(dst, src kernels.Tensor) {
	const op = "convert"
	n := check.Same(op, dst, src)
	b.owned(op, dst, src)
	b.elementwise(fmt.Sprintf("convert_%s_%s", suffix(src.DType()), suffix(dst.DType())), n, dst, src)
}

// Zero implements kernels.Backend.
func (b *Backend) Zero(x kernels.Tensor) {
	b.owned("zero", x)
	if x.Bytes() == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.forgetIDs(x.Addr(), x.Bytes())
	b.must(b.drv.memsetD8(x.Addr(), 0, x.Bytes(), b.stream))
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
