package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// The kernel parameter block: cuLaunchKernel takes void** kernelParams, an array
// of pointers to each argument's value. Both arrays live in one page of pinned
// host memory (not Go memory, so no Go pointer is handed to C to keep): slot i of
// the first maxParams words points at word maxParams+i, which holds argument i.
// The driver copies the values at launch, so the block is reused (under b.mu).
const maxParams = 32

func (b *Backend) initParams() error {
	var p unsafe.Pointer
	if err := cuCheck("cuMemAllocHost", b.d.cuMemAllocHost(&p, 2*maxParams*8)); err != nil {
		return err
	}
	b.params = unsafe.Slice((*uint64)(p), 2*maxParams)
	base := uint64(uintptr(p))
	for i := 0; i < maxParams; i++ {
		b.params[i] = base + uint64(8*(maxParams+i))
	}
	return nil
}

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
	v := b.params[maxParams:]
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
	r := b.d.cuLaunchKernel(f, d.gx, gy, 1, d.bx, 1, 1, 0, b.stream, unsafe.Pointer(unsafe.SliceData(b.params)), 0)
	b.must(cuCheck("cuLaunchKernel "+name, r))
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
		b.must(cuCheck("cuMemcpyHtoDAsync", b.d.cuMemcpyHtoDAsync(p, unsafe.Pointer(unsafe.SliceData(ids)), uint64(4*len(ids)), b.stream)))
	}
	return p
}
