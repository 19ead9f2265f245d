package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"unsafe"

	"gptkit/kernels"
)

// Device memory is plain cuMemAlloc memory (no managed memory: the host never
// addresses it; data moves by Upload and Download), through a caching
// allocator in PyTorch's manner, simplified for one stream: a freed block goes
// to a cache by its size class and the next allocation of that class reuses
// it. Every op runs on the backend's one stream, so a block reused while a
// queued kernel still reads its old contents is safe: the new owner's work is
// ordered after it. The one exception is the NCCL communication stream
// (nccl_async.go): a tensor a collective started there reads or writes must not
// be freed before FinishCollectives has made the backend's stream wait for it
// (or the communicator was aborted and its queue drained): the cache would hand
// the block to work on the backend's stream that is not ordered after the
// collective. The simulator, which frees in stream order, reports such a free
// as a stream hazard. When cuMemAlloc fails, the cache is released and the
// allocation tried once more before it is an out-of-memory error.
type memory struct {
	live   map[uintptr]int   // address → bytes, allocated blocks
	cache  map[int][]uintptr // size class → free blocks
	cached int64             // bytes in cache
	used   int64             // bytes in live

	// Pinned staging for small uploads (the batch's token ids): two slots, each
	// with the event recorded after its last copy, so the host writes a slot only
	// once the device has read it.
	pinned     unsafe.Pointer
	slotEvents [2]event
	slot       int

	// idMirror keeps the host copy of the last Int32 uploads by device address:
	// EncoderBackward groups positions by token on the host (as llm.c does), and
	// the ids the trainer uploaded are already there.
	idMirror map[uintptr][]int32
}

const (
	align       = 256     // every block starts on 256 bytes (cuMemAlloc gives 512)
	pinnedSlot  = 1 << 20 // bytes per pinned staging slot
	smallRound  = 512     // size classes below 1 MiB: multiples of 512 bytes
	largeRound  = 2 << 20 // above: multiples of 2 MiB
	mirrorLimit = 8       // Int32 uploads remembered
)

// sizeClass rounds a request up to its class. On the simulator every block is
// exactly its size and is freed for real (no cache), so an access past a
// tensor's end or after its Free is a fault there.
func (b *Backend) sizeClass(bytes int) int {
	if b.sim != nil {
		return max(bytes, 1)
	}
	if bytes <= 1<<20 {
		return roundUp(max(bytes, 1), smallRound)
	}
	return roundUp(bytes, largeRound)
}

// Alloc implements kernels.Backend: n zeroed elements of dt in device memory,
// zeroed in stream order (so an Upload or op issued after Alloc sees zeros
// before its own writes). Out of memory is a *kernels.OutOfMemoryError naming
// what, the bytes asked for and free.
func (b *Backend) Alloc(what string, dt kernels.DType, n int) (kernels.Tensor, error) {
	if n < 0 {
		panic("kernels: alloc: negative size")
	}
	b.enter()
	defer b.leave()
	size := n * dt.Size()
	p, err := b.allocBlock(what, size)
	if err != nil {
		return kernels.Tensor{}, err
	}
	b.must(b.drv.memsetD8(p, 0, max(size, 1), b.stream))
	if dt == kernels.BFloat16 || dt == kernels.Float16 {
		b.halves.Or(1 << dt) // (for Name)
	}
	return kernels.NewTensor(kernels.NewBuffer(b, p, nil, size, what), dt, n), nil
}

// allocBlock returns a block of at least size bytes from the cache or the
// driver. Called between enter and leave.
func (b *Backend) allocBlock(what string, size int) (uintptr, error) {
	m := &b.mem
	if m.live == nil {
		m.live, m.cache = map[uintptr]int{}, map[int][]uintptr{}
	}
	class := b.sizeClass(size)
	if free := m.cache[class]; len(free) > 0 {
		p := free[len(free)-1]
		m.cache[class] = free[:len(free)-1]
		m.cached -= int64(class)
		m.live[p] = class
		m.used += int64(class)
		return p, nil
	}
	p, err := b.drv.memAlloc(class)
	if errors.Is(err, Result(errOutOfMemory)) && b.sim != nil { // blocks freed in stream order, not yet run
		b.must(b.drv.streamSynchronize(b.stream))
		p, err = b.drv.memAlloc(class)
	}
	if errors.Is(err, Result(errOutOfMemory)) && m.cached > 0 {
		b.must(b.releaseCache())
		p, err = b.drv.memAlloc(class)
	}
	if errors.Is(err, Result(errOutOfMemory)) {
		free, total, _ := b.drv.memGetInfo()
		return 0, &kernels.OutOfMemoryError{Device: b.info.Name, What: what, Bytes: int64(size), Free: int64(free), Total: int64(total)}
	}
	if err != nil {
		return 0, fmt.Errorf("%w (allocating %d bytes for %s)", err, class, what)
	}
	m.live[p] = class
	m.used += int64(class)
	return p, nil
}

// releaseCache frees the cached blocks back to the driver (after the stream has
// finished with them).
func (b *Backend) releaseCache() error {
	m := &b.mem
	err := b.drv.streamSynchronize(b.stream)
	for class, free := range m.cache {
		for _, p := range free {
			err = errors.Join(err, b.drv.memFree(p))
		}
		delete(m.cache, class)
	}
	m.cached = 0
	return err
}

// Free implements kernels.Backend: the block goes back to the cache.
func (b *Backend) Free(t kernels.Tensor) {
	if t.Nil() {
		return
	}
	b.owned("free", t)
	b.enter()
	defer b.leave()
	b.freeBlock(t.Buffer().Addr())
}

func (b *Backend) freeBlock(p uintptr) {
	m := &b.mem
	class, ok := m.live[p]
	if !ok {
		panic(fmt.Sprintf("cuda: free of %#x, which is not a live allocation (freed twice?)", p))
	}
	delete(m.live, p)
	b.forgetIDs(p, class)
	m.used -= int64(class)
	if b.sim != nil {
		// Freed in stream order (cuMemFreeAsync): the simulator's allocation
		// table then faults any later access, and the streams' hazard check sees
		// the free as a write of the block; the other streams go on.
		b.must(b.sim.memFreeAsync(p, b.stream))
		return
	}
	m.cache[class] = append(m.cache[class], p)
	m.cached += int64(class)
}

// Upload implements kernels.Backend. Up to pinnedSlot bytes go through pinned
// staging (asynchronous: Upload returns once src is copied there); larger ones
// are copied from src directly, and waited for (the driver does not promise to
// have read pageable memory when an asynchronous copy returns).
func (b *Backend) Upload(dst kernels.Tensor, src []byte) {
	b.owned("upload", dst)
	if len(src) != dst.Bytes() {
		panic(fmt.Sprintf("kernels: upload of %d bytes into %s", len(src), dst))
	}
	if len(src) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	if dst.DType() == kernels.Int32 {
		b.mirrorIDs(dst, src)
	}
	b.copyIn(dst.Addr(), src)
}

// copyIn copies host bytes to device address dst in stream order. Called
// between enter and leave.
func (b *Backend) copyIn(dst uintptr, src []byte) {
	if len(src) <= pinnedSlot {
		m := &b.mem
		m.slot ^= 1
		ev := m.slotEvents[m.slot]
		b.must(b.drv.eventSynchronize(ev))
		stage := unsafe.Slice((*byte)(unsafe.Add(m.pinned, m.slot*pinnedSlot)), pinnedSlot)
		copy(stage, src)
		b.must(b.drv.memcpyHtoD(dst, unsafe.Pointer(&stage[0]), len(src), b.stream))
		b.must(b.drv.eventRecord(ev, b.stream))
		return
	}
	// From pageable memory the driver may return before it has read src (a GPU
	// that reads host memory directly: GH200, HMM): wait for the copy, so that the
	// caller may change or drop src on return. (Uploads this large are weights and
	// staging, not per-step data.)
	b.must(b.drv.memcpyHtoD(dst, unsafe.Pointer(&src[0]), len(src), b.stream))
	b.must(b.drv.streamSynchronize(b.stream))
	runtime.KeepAlive(src)
}

// Download implements kernels.Backend: after the ops before it, synchronously.
func (b *Backend) Download(dst []byte, src kernels.Tensor) {
	b.owned("download", src)
	if len(dst) != src.Bytes() {
		panic(fmt.Sprintf("kernels: download of %s into %d bytes", src, len(dst)))
	}
	if len(dst) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.must(b.drv.memcpyDtoH(unsafe.Pointer(&dst[0]), src.Addr(), len(dst), b.stream))
	b.must(b.drv.streamSynchronize(b.stream))
	runtime.KeepAlive(dst)
}

// mirrorIDs remembers the host copy of an Int32 upload (see memory.idMirror),
// forgetting the copies of any earlier upload it overwrites.
func (b *Backend) mirrorIDs(dst kernels.Tensor, src []byte) {
	m := &b.mem
	if m.idMirror == nil {
		m.idMirror = map[uintptr][]int32{}
	}
	b.forgetIDs(dst.Addr(), dst.Bytes())
	if len(m.idMirror) >= mirrorLimit {
		clear(m.idMirror)
	}
	ids := make([]int32, dst.Len())
	copy(kernels.Int32Bytes(ids), src)
	m.idMirror[dst.Addr()] = ids
}

// forgetIDs drops the host copies of uploads overlapping [addr, addr+n).
func (b *Backend) forgetIDs(addr uintptr, n int) {
	for a, ids := range b.mem.idMirror {
		if a < addr+uintptr(n) && addr < a+uintptr(4*len(ids)) {
			delete(b.mem.idMirror, a)
		}
	}
}

// hostIDs returns the n token ids of t on the host: the mirror of the upload
// that wrote them (t may be a slice of it), else downloaded. Called between
// enter and leave.
func (b *Backend) hostIDs(t kernels.Tensor, n int) []int32 {
	for addr, ids := range b.mem.idMirror {
		if a := t.Addr(); a >= addr && a+uintptr(4*n) <= addr+uintptr(4*len(ids)) {
			off := int(a-addr) / 4
			return ids[off : off+n]
		}
	}
	ids := make([]int32, n)
	b.must(b.drv.memcpyDtoH(unsafe.Pointer(&ids[0]), t.Addr(), 4*n, b.stream))
	b.must(b.drv.streamSynchronize(b.stream))
	return ids
}

// initStaging allocates the pinned staging slots and their events (Open).
func (b *Backend) initStaging() error {
	var err error
	if b.mem.pinned, err = b.drv.memAllocHost(2 * pinnedSlot); err != nil {
		return err
	}
	for i := range b.mem.slotEvents {
		if b.mem.slotEvents[i], err = b.drv.eventCreate(); err != nil {
			return err
		}
	}
	return nil
}

// tmp allocates scratch device memory for one op (freed with untmp at its end;
// the stream orders the reuse). Called between enter and leave.
func (b *Backend) tmp(bytes int) uintptr {
	p, err := b.allocBlock("scratch", bytes)
	if err != nil {
		panic(err)
	}
	return p
}

func (b *Backend) untmp(ps ...uintptr) {
	for _, p := range ps {
		if p != 0 {
			b.freeBlock(p)
		}
	}
}

// free releases everything (Close).
func (m *memory) free(d driverAPI) error {
	var err error
	addrs := make([]uintptr, 0, len(m.live))
	for p := range m.live {
		addrs = append(addrs, p)
	}
	for _, free := range m.cache {
		addrs = append(addrs, free...)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	for _, p := range addrs {
		err = errors.Join(err, d.memFree(p))
	}
	for _, ev := range m.slotEvents {
		if ev != 0 {
			err = errors.Join(err, d.eventDestroy(ev))
		}
	}
	if m.pinned != nil {
		err = errors.Join(err, d.memFreeHost(m.pinned))
	}
	*m = memory{}
	return err
}

// MemoryUse reports the bytes of live allocations and of the cache.
func (b *Backend) MemoryUse() (used, cached int64) { return b.mem.used, b.mem.cached }

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// DeviceMemory reports the device's free and total memory in bytes (the trainer checks
// a run's estimated need against the free memory before allocating).
func (b *Backend) DeviceMemory() (free, total int64) {
	b.enter()
	defer b.leave()
	f, t, _ := b.drv.memGetInfo()
	return int64(f), int64(t)
}
