package tokenize

import (
	"strings"
	"unsafe"
)

// makeIDs returns an empty slice with room for n ids whose memory is not cleared: the
// encoder writes every id before it is read, and its caller clears the room left after
// the last (~5% of it), so no old bytes can be seen. make clears it all first, ~8% of
// Encode's time on English (a 1 MB text's ~2.4 MB of ids: BenchmarkEncode's profile,
// runtime.memclrNoHeapPointers). The memory comes from strings.Builder.Grow, which
// allocates without clearing (the runtime's MakeNoZero; ids hold no pointers, like
// bytes); if that ever changes, it is cleared as before and nothing else.
func makeIDs[T tokenID](n int) []T {
	size := n * int(unsafe.Sizeof(T(0)))
	if size < 4096 {
		return make([]T, 0, n) // the clearing costs nothing here
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteByte(0) // so that the string below is not empty: its data pointer is the buffer's
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.StringData(b.String()))), n)[:0]
}
