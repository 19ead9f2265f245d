package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Alloc granularity: buffers under slabMin bytes are carved from shared managed
// slabs of slabSize (the conformance suite allocates thousands of small ones);
// larger ones get their own allocation. Every buffer starts on a 256-byte
// boundary (what cuBLAS and vector loads like).
const (
	slabSize = 64 << 20
	slabMin  = 4 << 20
	align    = 256
)

// memory tracks the backend's allocations: managed (Alloc) and device (scratch).
type memory struct {
	managed []region // every managed allocation, for ownership checks and Close
	slab    region   // the slab small buffers come from
	used    int      // bytes of slab handed out
	device  []uintptr
	scratch map[scratchSlot]dregion
}

type region struct {
	p    unsafe.Pointer
	size int
}

// dregion is a device allocation (not addressable from Go).
type dregion struct {
	p    uintptr
	size int
}

func (r region) contains(p uintptr, n int) bool {
	lo := uintptr(r.p)
	return p >= lo && p+uintptr(n) <= lo+uintptr(r.size)
}

// Alloc implements kernels.Backend: n zeroed float32s of managed memory, valid
// until Close. It panics with *OutOfMemoryError when the GPU lacks the memory.
func (b *Backend) Alloc(n int) []float32 {
	if n < 0 {
		panic("kernels: alloc: negative size")
	}
	b.enter()
	defer b.leave()
	bytes := roundUp(max(n, 1)*4, align)
	if bytes >= slabMin {
		r := b.allocManaged(bytes)
		return unsafe.Slice((*float32)(r.p), n)[:n:n]
	}
	m := &b.mem
	if m.slab.p == nil || m.used+bytes > m.slab.size {
		m.slab, m.used = b.allocManaged(slabSize), 0
	}
	p := unsafe.Add(m.slab.p, m.used)
	m.used += bytes
	return unsafe.Slice((*float32)(p), n)[:n:n]
}

// allocManaged allocates and zeroes bytes of managed memory (on the device: it is
// resident there afterwards), refusing with *OutOfMemoryError what the device has
// no room for (managed memory would otherwise oversubscribe into host memory,
// silently and slowly).
func (b *Backend) allocManaged(bytes int) region {
	b.checkFree(bytes)
	var p unsafe.Pointer
	r := b.d.cuMemAllocManaged(&p, uint64(bytes), 1 /* CU_MEM_ATTACH_GLOBAL */)
	if r == errOutOfMemory {
		b.oom(bytes)
	}
	b.must(cuCheck(fmt.Sprintf("cuMemAllocManaged(%d bytes)", bytes), r))
	b.must(cuCheck("cuMemsetD8Async", b.d.cuMemsetD8Async(uintptr(p), 0, uint64(bytes), b.stream)))
	b.must(cuCheck("cuStreamSynchronize", b.d.cuStreamSynchronize(b.stream)))
	reg := region{p, bytes}
	b.mem.managed = append(b.mem.managed, reg)
	return reg
}

func (b *Backend) checkFree(bytes int) {
	var free, total uint64
	b.must(cuCheck("cuMemGetInfo", b.d.cuMemGetInfo(&free, &total)))
	if uint64(bytes) > free {
		b.oom(bytes)
	}
}

func (b *Backend) oom(bytes int) {
	var free, total uint64
	b.d.cuMemGetInfo(&free, &total)
	panic(&OutOfMemoryError{Device: b.info.Name, Asked: int64(bytes), Free: free, Total: total})
}

// owns reports whether s lies in the backend's managed memory (NCCL and the
// kernels can address it).
func (b *Backend) owns(s []float32) bool {
	if len(s) == 0 {
		return true
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	for _, r := range b.mem.managed {
		if r.contains(p, 4*len(s)) {
			return true
		}
	}
	return false
}

// scratchSlot names a device scratch buffer; each is reused by every op that
// needs it (ops run one at a time on one stream).
type scratchSlot int

const (
	scrIDs scratchSlot = iota // token ids or targets
	scrTok                    // encoder backward buckets
	scrStart
	scrPos
	scrPartial // column partial sums
	scrPartial2
	scrSumSq // sum-of-squares partials (float64)
	scrQ     // attention
	scrK
	scrV
	scrY
	scrDQ
	scrDK
	scrDV
	scrDAtt
)

// scratch returns device scratch slot s with at least bytes, growing it (after a
// sync, so no queued kernel still uses the old one).
func (b *Backend) scratch(s scratchSlot, bytes int) uintptr {
	m := &b.mem
	if m.scratch == nil {
		m.scratch = map[scratchSlot]dregion{}
	}
	if r, ok := m.scratch[s]; ok && r.size >= bytes {
		return r.p
	}
	bytes = roundUp(max(bytes, align), align)
	if r, ok := m.scratch[s]; ok {
		b.must(cuCheck("cuStreamSynchronize", b.d.cuStreamSynchronize(b.stream)))
		b.must(cuCheck("cuMemFree", b.d.cuMemFree(r.p)))
		delete(m.scratch, s)
	}
	b.checkFree(bytes)
	var p uintptr
	r := b.d.cuMemAlloc(&p, uint64(bytes))
	if r == errOutOfMemory {
		b.oom(bytes)
	}
	b.must(cuCheck("cuMemAlloc", r))
	m.scratch[s] = dregion{p, bytes}
	return p
}

// free releases everything (Close).
func (m *memory) free(d *driver) error {
	var err error
	for _, r := range m.managed {
		err = errors.Join(err, cuCheck("cuMemFree", d.cuMemFree(uintptr(r.p))))
	}
	for _, r := range m.scratch {
		err = errors.Join(err, cuCheck("cuMemFree", d.cuMemFree(r.p)))
	}
	*m = memory{}
	return err
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// DeviceMemory reports the device's free and total memory in bytes (the trainer checks
// a run's estimated need against the free memory before allocating).
func (b *Backend) DeviceMemory() (free, total int64) {
	var f, t uint64
	b.d.cuMemGetInfo(&f, &t)
	return int64(f), int64(t)
}
