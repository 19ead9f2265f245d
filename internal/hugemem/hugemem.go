// Package hugemem allocates large, long-lived, pointer-free arrays in memory that the
// kernel is asked to back with transparent huge pages (2 MB), for the tokenizer's tables
// and caches and the buffers of `tokenize run`.
//
// Why: the encoder's tables (the vocabulary's and the merges' hash tables, the prefix
// table, the backtracking encoder's tokens) and each goroutine's caches are ~10 MB read
// at random, a few lines per byte of text, and `tokenize run` streams its text and ids
// past them. On 4 KB pages every page of that fresh memory costs a page fault (~3 µs in
// the 2-vCPU "AMD EPYC" VM of docs/tokenizer-performance.md, 0.6 µs per 4 KB on 2 MB
// pages), and the tables span thousands of pages, more than a core's second-level TLB
// holds. There, `tokenize run` took less than half the faults and 2.6-4.8% less CPU, and
// loading a tokenizer 10-25% less; the library encoding 1 MB texts on one core, whose
// tables stay in the caches, did not move (Performance notes).
//
// How: arrays from 64 KB up are carved from chunks of 2 MB-aligned memory, advised
// MADV_HUGEPAGE (Linux), which the kernel honours when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" (Debian's and Ubuntu's
// default) or "always"; under "never", and on other systems, they are plain
// allocations. The Go runtime offers no aligned allocation and does not advise its heap,
// hence this package, written by hand: no library does it for Go's heap.
//
// The chunks are ordinary Go memory (a []byte the arrays are carved from, kept alive by
// any array in it), so the collector frees a chunk once nothing in it is reachable. A
// chunk's tail that the next array does not fit in stays unused (less than that array's
// size); the alignment costs up to 2 MB of address space per chunk, not memory. Where
// make reuses memory the heap had before, it clears it, which faults it in on small
// pages, the alignment's slack too; so each new chunk's allocation is handed back to the
// kernel before it is advised (MADV_DONTNEED: it is all zeros, and reads as zeros
// after), and the slack holds no memory and the chunk faults in on huge pages.
//
// MapUnwritten (Mapped) is the other way: an array mapped straight from the kernel,
// outside the heap, for a buffer whose one owner reuses it and unmaps it when done
// (make clears a heap array over its whole size whenever the heap reuses memory).
//
// GPTKIT_HUGEPAGES=0 in the environment turns it off (plain allocations): for comparing
// the two.
package hugemem

import (
	"os"
	"reflect"
	"sync"
	"unsafe"
)

// chunkBytes is the size and alignment of a huge page on amd64 and arm64 (4 KB base
// pages).
const chunkBytes = 2 << 20

// MinBytes is the size from which Make carves an array from a chunk: below it, an
// array lies in few enough pages that a chunk's tail would cost more than it saves.
const MinBytes = 64 << 10

var (
	on = os.Getenv("GPTKIT_HUGEPAGES") != "0" && advisable()
	mu sync.Mutex
	// free is the rest of the current chunk: 64-byte aligned, untouched.
	free []byte
)

// On reports whether Make carves arrays from huge-page chunks (Linux, and
// GPTKIT_HUGEPAGES is not 0); whether the kernel backs them with huge pages is its
// setting's.
func On() bool { return on }

// Make returns a zeroed []T of length and capacity n, carved from a huge-page chunk
// when it is MinBytes or more, else from make; each of its pages is written once
// (WriteFault). T must hold no pointers (the chunks are byte arrays, which the
// collector does not scan): Make panics otherwise, a programming error.
func Make[T any](n int) []T { return WriteFault(MakeUnwritten[T](n)) }

// MakeUnwritten is Make for an array that is written in order before it is read (the
// target of appends): its pages are left untouched, so the part never reached costs
// address space only. That lets an array be sized for the most it could need rather
// than an estimate it may outgrow (append copying it to fresh memory). Reading a page
// before writing it is correct (zeros) but takes the extra fault that WriteFault avoids.
func MakeUnwritten[T any](n int) []T {
	var zero T
	size := uintptr(n) * unsafe.Sizeof(zero)
	if !on || n < 0 || size < MinBytes {
		return make([]T, n)
	}
	if !pointerFree(reflect.TypeFor[T]()) {
		panic("hugemem: an array of a type that holds pointers: " + reflect.TypeFor[T]().String())
	}
	b := carve(int(size))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// carve returns size bytes from the current chunk, or from a new one (size rounded up
// to 2 MB) if they do not fit.
func carve(size int) []byte {
	size = (size + 63) &^ 63
	mu.Lock()
	defer mu.Unlock()
	if len(free) < size {
		raw := make([]byte, chunkSpan(size)+chunkBytes)
		free = alignedSpan(raw, size)
		advise(raw, free)
	}
	b := free[:size:size]
	free = free[size:]
	return b
}

// chunkSpan is size rounded up to whole chunks (2 MB).
func chunkSpan(size int) int { return (size + chunkBytes - 1) &^ (chunkBytes - 1) }

// alignedSpan is the chunkSpan(size) bytes of raw (chunkSpan(size)+chunkBytes long)
// that start at a chunk boundary.
func alignedSpan(raw []byte, size int) []byte {
	span := chunkSpan(size)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	off := int((at+chunkBytes-1)&^(chunkBytes-1) - at)
	return raw[off : off+span : off+span]
}

// WriteFault writes a zero into each page of b, fresh from make, before any read of it.
//
// Go hands large fresh allocations on without touching them (the kernel's pages are
// zero), and the caches of the tokenizer's encode states (~3.5 MB: the front cache, the
// piece cache, the backtracking encoder's) are read before they are written: a lookup
// that misses comes first. The read maps the kernel's shared zero page; the first write
// then takes a second fault that replaces it and must flush the old mapping from the
// TLB of every CPU running the process: an inter-processor interrupt, which in a VM
// costs microseconds more. perf of `tokenize run` on 2 vCPUs put those flushes at ~5% of
// the process (flush_tlb_mm_range under do_wp_page, from encodePiece, pieceCache.put and
// compatibleCached). Written first, a page takes one fault and no flush.
func WriteFault[T any](b []T) []T {
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

// pageBytes is the stride of WriteFault: the smallest page size of the platforms Go
// runs on (a larger page is written more than once, which costs nothing).
const pageBytes = 4096

// pointerFree reports whether values of t hold no pointers.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
