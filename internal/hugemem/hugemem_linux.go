package hugemem

import "golang.org/x/sys/unix"

// advisable reports whether madvise can ask for transparent huge pages here.
func advisable() bool { return true }

// advise hands raw, a fresh allocation that holds only zeros, back to the kernel (make
// may have cleared it, faulting it in on small pages) and asks for huge pages in chunk,
// its 2 MB-aligned part. An error (a kernel without transparent huge pages) leaves
// chunk on small pages.
func advise(raw, chunk []byte) {
	_ = unix.Madvise(raw, unix.MADV_DONTNEED)
	_ = unix.Madvise(chunk, unix.MADV_HUGEPAGE)
}

// mapHuge maps size bytes (rounded up to 2 MB) at a 2 MB boundary, advised
// MADV_HUGEPAGE; raw is the whole mapping to unmap. nil when mmap fails.
func mapHuge(size int) (raw, mem []byte) {
	raw, err := unix.Mmap(-1, 0, chunkSpan(size)+chunkBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil
	}
	span := alignedSpan(raw, size)
	_ = unix.Madvise(span, unix.MADV_HUGEPAGE)
	return raw, span[:size]
}

// unmap unmaps a mapping of mapHuge.
func unmap(raw []byte) { _ = unix.Munmap(raw) }
