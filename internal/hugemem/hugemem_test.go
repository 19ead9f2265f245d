package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestMakeZeroedAligned(t *testing.T) {
	if !on {
		t.Skip("huge-page tables are off here (not Linux, or GPTKIT_HUGEPAGES=0)")
	}
	fallbacks := thpFallbacks()
	// 3 MB: a chunk of its own, rounded up to 4 MB (no chunk of this package's tests
	// has 3 MB left: the others are 2 MB, and this one's rest is 1 MB).
	a := Make[uint64](3 << 17)
	b := Make[pair](1 << 14)
	c := Make[atomic.Uint64](1 << 13)
	if p := uintptr(unsafe.Pointer(&a[0])); p%chunkBytes != 0 {
		t.Errorf("a 3 MB table starts at %#x, not at a 2 MB boundary", p)
	}
	for i := range a {
		if a[i] != 0 {
			t.Fatalf("a[%d] = %d, not zero", i, a[i])
		}
		a[i] = ^uint64(0)
	}
	for i := range b {
		if b[i] != (pair{}) {
			t.Fatalf("b[%d] is not zero", i)
		}
		b[i] = pair{1, 2}
	}
	for i := range c {
		if c[i].Load() != 0 {
			t.Fatalf("c[%d] is not zero", i)
		}
	}
	// The tables do not overlap.
	pa, pb, pc := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&c[0]))
	ends := func(p uintptr, n uintptr) [2]uintptr { return [2]uintptr{p, p + n} }
	spans := [][2]uintptr{ends(pa, uintptr(len(a))*8), ends(pb, uintptr(len(b))*16), ends(pc, uintptr(len(c))*8)}
	for i := range spans {
		for j := range i {
			if spans[i][0] < spans[j][1] && spans[j][0] < spans[i][1] {
				t.Errorf("tables %d and %d overlap: %#x and %#x", i, j, spans[i], spans[j])
			}
		}
	}
	// Where the kernel gives huge pages on request, the 3 MB table lies in them.
	if mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); strings.Contains(string(mode), "[madvise]") || strings.Contains(string(mode), "[always]") {
		if kb := anonHugeKB(t, pa); kb < 2048 && thpFallbacks() > fallbacks {
			// The kernel tried and had no free 2 MB block (thp_fault_fallback): its
			// choice, not a fault of ours.
			t.Logf("the kernel fell back to small pages (%d KB of huge pages)", kb)
		} else if kb < 2048 {
			t.Errorf("the mapping holding a 3 MB table has %d KB of huge pages, want at least 2048 (THP mode %q)", kb, strings.TrimSpace(string(mode)))
		}
	} else {
		t.Logf("transparent huge pages are not offered here (%q): tables stay on small pages", strings.TrimSpace(string(mode)))
	}
}

// anonHugeKB returns the AnonHugePages of the mapping holding address p, from
// /proc/self/smaps.
func anonHugeKB(t *testing.T, p uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < b
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			kb, _ := strconv.Atoi(fields[1])
			return kb
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", p)
	return 0
}

// thpFallbacks returns /proc/vmstat's thp_fault_fallback: the huge-page faults the
// kernel served with small pages for want of a free 2 MB block (-1 if unknown).
func thpFallbacks() int {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "thp_fault_fallback "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// pair is a pointer-free element of 16 bytes.
type pair struct{ a, b uint64 }

func TestPointerFree(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
		got  bool
	}{
		{"uint64", true, pointerFree(reflect.TypeFor[uint64]())},
		{"pair", true, pointerFree(reflect.TypeFor[pair]())},
		{"array of structs", true, pointerFree(reflect.TypeFor[[4]struct {
			a int32
			b [2]uint16
		}]())},
		{"atomic.Uint64", true, pointerFree(reflect.TypeFor[atomic.Uint64]())},
		{"uintptr", true, pointerFree(reflect.TypeFor[uintptr]())},
		{"string", false, pointerFree(reflect.TypeFor[string]())},
		{"*int", false, pointerFree(reflect.TypeFor[*int]())},
		{"struct with a slice", false, pointerFree(reflect.TypeFor[struct {
			a int
			b []byte
		}]())},
		{"array of strings", false, pointerFree(reflect.TypeFor[[2]string]())},
	} {
		if c.got != c.ok {
			t.Errorf("pointerFree(%s) = %v, want %v", c.name, c.got, c.ok)
		}
	}
}

// TestMakeConcurrent: arrays made at once by several goroutines do not overlap (each
// fills its own with its mark and finds it intact).
func TestMakeConcurrent(t *testing.T) {
	const goroutines, each = 8, 12
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var arrays [][]uint32
			for k := range each {
				a := Make[uint32](MinBytes/4 + k*10007)
				for i := range a {
					a[i] = uint32(g)
				}
				arrays = append(arrays, a)
			}
			for _, a := range arrays {
				for i, v := range a {
					if v != uint32(g) {
						errs <- fmt.Sprintf("goroutine %d: element %d holds %d", g, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestMakeSmallAndPointers: arrays under MinBytes come from make; a type with pointers
// is refused.
func TestMakeSmallAndPointers(t *testing.T) {
	if a := Make[uint64](10); len(a) != 10 || cap(a) != 10 {
		t.Errorf("Make[uint64](10): len %d cap %d", len(a), cap(a))
	}
	if a := Make[byte](0); len(a) != 0 {
		t.Errorf("Make[byte](0): len %d", len(a))
	}
	if !On() {
		return
	}
	defer func() {
		if recover() == nil {
			t.Error("Make[*int] of MinBytes did not panic")
		}
	}()
	Make[*int](MinBytes)
}

// TestWriteFault: WriteFault leaves a slice as it was (zero, its length and capacity),
// whatever its element size, and takes an empty one.
func TestWriteFault(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 3 << 16} {
		b := WriteFault(make([]byte, n))
		for i, v := range b {
			if v != 0 {
				t.Fatalf("%d bytes: byte %d is %d", n, i, v)
			}
		}
		s := WriteFault(make([]pair, n/16+1))
		if len(s) != n/16+1 || s[len(s)-1] != (pair{}) {
			t.Fatalf("%d pairs: %d long, last %+v", n/16+1, len(s), s[len(s)-1])
		}
	}
}
