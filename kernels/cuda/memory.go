package cuda

import (
	"errors"
	"unsafe"
)

// Alloc granularity: buffers under slabMin bytes are carved from shared managed
// slabs of slabSize (the conformance suite allocates thousands of small ones);
// larger ones, and all on the simulator, get their own allocation. Every buffer starts on a 256-byte
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
	// On the simulator every buffer is its own allocation, so an access past
	// its end is a fault there (a slab would hide it behind its neighbour).
	if bytes >= slabMin || b.sim != nil {
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
	p, err := b.drv.memAllocManaged(bytes)
	if errors.Is(err, Result(errOutOfMemory)) {
		b.oom(bytes)
	}
	b.must(err)
	b.must(b.drv.memsetD8(uintptr(p), 0, bytes, b.stream))
	b.must(b.drv.streamSynchronize(b.stream))
	reg := region{p, bytes}
	b.mem.managed = append(b.mem.managed, reg)
	return reg
}

func (b *Backend) checkFree(bytes int) {
	free, _, err := b.drv.memGetInfo()
	b.must(err)
	if uint64(bytes) > free {
		b.oom(bytes)
	}
}

func (b *Backend) oom(bytes int) {
	free, total, _ := b.drv.memGetInfo()
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
		b.must(b.drv.streamSynchronize(b.stream))
		b.must(b.drv.memFree(r.p))
		delete(m.scratch, s)
	}
	b.checkFree(bytes)
	p, err := b.drv.memAlloc(bytes)
	if errors.Is(err, Result(errOutOfMemory)) {
		b.oom(bytes)
	}
	b.must(err)
	m.scratch[s] = dregion{p, bytes}
	return p
}

// free releases everything (Close).
func (m *memory) free(d driverAPI) error {
	var err error
	for _, r := range m.managed {
		err = errors.Join(err, d.memFree(uintptr(r.p)))
	}
	for _, r := range m.scratch {
		err = errors.Join(err, d.memFree(r.p))
	}
	*m = memory{}
	return err
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// DeviceMemory reports the device's free and total memory in bytes (the trainer checks
// a run's estimated need against the free memory before allocating).
func (b *Backend) DeviceMemory() (free, total int64) {
	b.enter()
	defer b.leave()
	f, t, _ := b.drv.memGetInfo()
	return int64(f), int64(t)
}
