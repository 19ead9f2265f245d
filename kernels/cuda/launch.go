package cuda

import (
	"fmt"
	"math"

	"gptkit/kernels"
)

// dims is a launch shape.
type dims struct{ gx, gy, bx uint32 }

// launch runs kernel name with args, each an int32, uint32, float32 (4 bytes),
// int64, uint64, float64, uintptr (device address, 8 bytes) or kernels.Tensor
// (its device address; 0 for none), matching the kernel's C signature. Called
// between enter and leave.
func (b *Backend) launch(name string, d dims, args ...any) {
	f, ok := b.fns[name]
	if !ok {
		panic("cuda: no kernel " + name + " (rerun make ptx)")
	}
	if len(args) > maxParams {
		panic("cuda: too many kernel arguments")
	}
	b.args = append(b.args[:0], make([]uint64, len(args))...)
	v := b.args
	for i, a := range args {
		switch x := a.(type) {
		case int32:
			v[i] = uint64(uint32(x))
		case uint32:
			v[i] = uint64(x)
		case float32:
			v[i] = uint64(math.Float32bits(x))
		case int64:
			v[i] = uint64(x)
		case uint64:
			v[i] = x
		case uintptr:
			v[i] = uint64(x)
		case float64:
			v[i] = math.Float64bits(x)
		case kernels.Tensor:
			v[i] = uint64(x.Addr())
		default:
			panic(fmt.Sprintf("cuda: kernel %s: argument %d has type %T", name, i, a))
		}
	}
	if b.sim != nil {
		b.sim.declareLaunch(args)
	}
	gy := max(d.gy, 1)
	if b.prof != nil {
		b.profBegin(name, b.profFLOPs)
		defer b.profEnd()
	}
	b.profFLOPs = 0
	if err := b.drv.launchKernel(f, dim3{d.gx, gy, 1}, dim3{d.bx, 1, 1}, 0, b.stream, v); err != nil {
		panic(fmt.Errorf("%w (kernel %s)", err, name))
	}
}

// threads is the block size of the elementwise and row kernels.
const threads = 256

// elems is the launch shape of a grid-stride loop over n elements: enough blocks
// to fill the GPU, no more.
func (b *Backend) elems(n int) dims {
	blocks := (n + threads - 1) / threads
	blocks = max(1, min(blocks, 32*max(b.info.SMs, 1)))
	return dims{gx: uint32(blocks), bx: threads}
}

// warpRows is the launch shape of a one-warp-per-row kernel over rows.
func warpRows(rows int) dims {
	per := threads / 32
	return dims{gx: uint32((rows + per - 1) / per), bx: threads}
}

// suffix is the kernel name suffix of an activation dtype (common.cuh's DTYPES).
func suffix(dt kernels.DType) string {
	switch dt {
	case kernels.Float32:
		return "f32"
	case kernels.BFloat16:
		return "bf16"
	case kernels.Float16:
		return "f16"
	}
	panic("cuda: no kernels for " + dt.String())
}

// kname is base's instantiation for dtype dt.
func kname(base string, dt kernels.DType) string { return base + "_" + suffix(dt) }

// sameType panics unless every given tensor has t's dtype (the kernels take one
// activation type; statistics and weight gradients are checked as float32 by
// the ops).
func sameType(op string, t kernels.Tensor, ts ...kernels.Tensor) kernels.DType {
	for _, u := range ts {
		if !u.Nil() && u.DType() != t.DType() {
			panic(fmt.Sprintf("kernels: %s: the cuda kernels take one activation dtype; %s and %s differ", op, t, u))
		}
	}
	return t.DType()
}
