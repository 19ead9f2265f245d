package tokenize

import "unsafe"

// writeFault writes a zero into each page of b, fresh from make, before any read of it.
//
// Go hands large fresh allocations on without touching them (the kernel's pages are
// zero), and the caches of an encodeState (~3.5 MB: the front cache, the piece cache,
// the backtracking encoder's) are read before they are written: a lookup that misses
// comes first. The read maps the kernel's shared zero page; the first write then takes
// a second fault that replaces it and must flush the old mapping from the TLB of every
// CPU running the process: an inter-processor interrupt, which in a VM costs
// microseconds more. perf of `tokenize run` on 2 vCPUs put those flushes at ~5% of the
// process (flush_tlb_mm_range under do_wp_page, from encodePiece, pieceCache.put and
// compatibleCached). Written first, a page takes one fault and no flush.
func writeFault[T any](b []T) []T {
	if len(b) == 0 {
		return b
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	size := uintptr(len(b)) * unsafe.Sizeof(b[0])
	for off := uintptr(0); off < size; off += pageBytes {
		*(*byte)(unsafe.Add(p, off)) = 0
	}
	return b
}

// pageBytes is the stride of writeFault: the smallest page size of the platforms Go
// runs on (a larger page is written more than once, which costs nothing).
const pageBytes = 4096
