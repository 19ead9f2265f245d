//go:build amd64 && !noasm && gc

package tokenize

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Stubs of shorttokens_amd64.s: the hot loop of appendShortTokensGo (encode.go) for ids
// of 8 (int) and 4 (int32) bytes.

var hasShortTokensAsm = cpu.X86.HasBMI2

// What shorttokens_amd64.s has as numbers: the front cache's sizes, the offsets of
// shortArgs' fields and the layout of keyMasks (a compile error if they change).
var (
	_ = [1]struct{}{}[frontBits-16]
	_ = [1]struct{}{}[frontLongBits-14]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.table)-0]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.long)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.masks)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.text)-24]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.ends)-32]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.nends)-40]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.out)-48]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.m)-56]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.prev)-64]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.limit)-72]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.k)-80]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.more)-88]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.nmore)-96]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.capOut)-104]
	_ = [1]struct{}{}[unsafe.Offsetof(shortArgs{}.full)-112]
	_ = [1]struct{}{}[unsafe.Sizeof(shortArgs{})-120]
	_ = [1]struct{}{}[unsafe.Sizeof(keyMasks)-4*256]
)

//go:noescape
func shortTokens64(a *shortArgs)

//go:noescape
func shortTokens32(a *shortArgs)

// appendShortTokens is appendShortTokensGo, in assembly where the CPU allows it.
func appendShortTokens[T tokenID](front *frontCache, text string, avail, prev int, ends []int, dst []T) ([]T, int) {
	if avail < 16 || len(front.slots) == 0 || len(ends) == 0 {
		return dst, 0
	}
	// The assembly stores three ids a piece: give it as many pieces as dst has room for,
	// the twin the rest (and the piece of four or more ids that the room left cannot take).
	nk := min(len(ends), (cap(dst)-len(dst))/frontIDs)
	if !hasShortTokensAsm || nk == 0 {
		return appendShortTokensGo(front, text, avail, prev, ends, dst)
	}
	// The arguments live in front (written field by field: a fresh struct each call
	// was ~5% of the mixed corpus's time, where pieces leave the loop often).
	a := &front.args // its tables set by front.init
	a.text, a.ends, a.nends = uintptr(unsafe.Pointer(unsafe.StringData(text))), uintptr(unsafe.Pointer(&ends[0])), nk
	a.out, a.m, a.prev, a.limit = uintptr(unsafe.Pointer(unsafe.SliceData(dst))), len(dst), prev, avail-16
	a.more, a.nmore, a.capOut, a.full = uintptr(unsafe.Pointer(unsafe.SliceData(front.more))), len(front.more), cap(dst), 0
	if unsafe.Sizeof(T(0)) == 8 {
		shortTokens64(a)
	} else {
		shortTokens32(a)
	}
	// What a's addresses point to stays alive to here (see shortArgs; the callers keep
	// it too). The addresses stay in a until the next call, read by nothing.
	runtime.KeepAlive(text)
	runtime.KeepAlive(ends)
	runtime.KeepAlive(dst)
	dst = dst[:a.m]
	if a.full != 0 || a.k == nk && nk < len(ends) {
		// Out of room: the twin goes on, growing dst as it needs.
		var k int
		dst, k = appendShortTokensGo(front, text, avail, a.prev, ends[a.k:], dst)
		return dst, a.k + k
	}
	return dst, a.k
}
