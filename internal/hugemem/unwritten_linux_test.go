package hugemem

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMakeUnwritten: an array from MakeUnwritten reads as zeros and holds no memory
// past what was written: of an 8 MB array whose first bytes were written, the pages from
// 4 MB on are not resident (mincore), where Make's would all be.
func TestMakeUnwritten(t *testing.T) {
	if !on {
		t.Skip("huge-page tables are off here (not Linux, or GPTKIT_HUGEPAGES=0)")
	}
	a := MakeUnwritten[int32](2 << 20)
	if len(a) != 2<<20 || cap(a) != 2<<20 {
		t.Fatalf("len %d cap %d", len(a), cap(a))
	}
	for i := range 1024 {
		a[i] = int32(i)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*4)
	if n := resident(t, b[4<<20:]); n != 0 {
		t.Errorf("%d pages of the unwritten half are resident", n)
	}
	for i, v := range a {
		if want := int32(0); i < 1024 {
			want = int32(i)
			if v != want {
				t.Fatalf("a[%d] = %d, want %d", i, v, want)
			}
		} else if v != 0 {
			t.Fatalf("a[%d] = %d, not zero", i, v)
		}
	}
}

// resident counts the pages of b that are in memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	// mincore wants a page-aligned start.
	off := int(uintptr(unsafe.Pointer(&b[0])) % pageBytes)
	start := unsafe.Add(unsafe.Pointer(&b[0]), -off)
	size := len(b) + off
	vec := make([]byte, (size+pageBytes-1)/pageBytes)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(start), uintptr(size), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
