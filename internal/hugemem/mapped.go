package hugemem

import (
	"reflect"
	"sync/atomic"
	"unsafe"
)

// mappedBytes is the size of the mappings of MapUnwritten not yet unmapped.
var mappedBytes atomic.Int64

// MappedBytes is the size of the mappings of MapUnwritten not yet unmapped: for tests
// that check a command leaves none behind.
func MappedBytes() int64 { return mappedBytes.Load() }

// Mapped is an array mapped straight from the kernel, outside Go's heap, on huge pages
// where the kernel gives them, for a buffer that one owner grows and reuses and that is
// released when the owner is done with it (`tokenize encode`'s per-worker ids and
// output text).
//
// Why not MakeUnwritten: an array carved from the heap is cleared by make whenever the
// heap reuses memory it had before (the garbage of loading a tokenizer, a buffer
// outgrown and dropped), which faults the whole array in on small pages, every page the
// kernel clears first; carve then hands it back and the writes fault it in again. perf
// of `tokenize encode` on 100 MB put that clearing at ~6% of the command's CPU and the
// kernel's clearing of the pages it faulted at 16% (parts of 1-3.7 MB: each larger part
// made a worker's arrays again). A mapping costs one fault per page first written and
// nothing for the rest.
//
// Its memory is not the collector's: S must not be used after Unmap, nor kept where the
// owner cannot see it. Where mapping fails (and off Linux) S is an ordinary array and
// Unmap does nothing.
type Mapped[T any] struct {
	S   []T    // the array, n elements; its pages read as zeros until written
	raw []byte // the whole mapping (nil: S is from make)
}

// MapUnwritten maps an array of n T (T must hold no pointers: it panics otherwise, a
// programming error).
func MapUnwritten[T any](n int) *Mapped[T] {
	if !pointerFree(reflect.TypeFor[T]()) {
		panic("hugemem: an array of a type that holds pointers: " + reflect.TypeFor[T]().String())
	}
	var zero T
	size := uintptr(max(n, 0)) * unsafe.Sizeof(zero)
	if on && size >= MinBytes {
		if raw, mem := mapHuge(int(size)); mem != nil {
			mappedBytes.Add(int64(len(raw)))
			return &Mapped[T]{S: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n), raw: raw}
		}
	}
	return &Mapped[T]{S: make([]T, n)}
}

// Unmap returns the memory to the kernel; m.S is nil after. Calling it again, or on
// nil, does nothing.
func (m *Mapped[T]) Unmap() {
	if m == nil {
		return
	}
	m.S = nil
	if m.raw != nil {
		unmap(m.raw)
		mappedBytes.Add(-int64(len(m.raw)))
		m.raw = nil
	}
}
