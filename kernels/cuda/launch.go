package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// dims is a launch shape.
type dims struct{ gx, gy, bx uint32 }

// launch runs kernel name with args, each an int32, uint32, float32 (4 bytes),
// int64, uint64 or uintptr (device address, 8 bytes), matching the kernel's C
// signature. Called between enter and leave.
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
		default:
			panic(fmt.Sprintf("cuda: kernel %s: argument %d has type %T", name, i, a))
		}
	}
	gy := max(d.gy, 1)
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

// dp is the device address of s (managed memory: the same as the host address),
// 0 for an empty or nil slice.
func dp(s []float32) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
}

// copyIDs copies ids into device scratch slot s, in stream order, and returns its
// address.
func (b *Backend) copyIDs(s scratchSlot, ids []int32) uintptr {
	p := b.scratch(s, 4*len(ids))
	if len(ids) > 0 {
		b.must(b.drv.memcpyHtoD(p, unsafe.Pointer(unsafe.SliceData(ids)), 4*len(ids), b.stream))
	}
	return p
}
