package hugemem

import (
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMapUnwritten: a mapped array is outside the heap, 2 MB aligned, reads as zeros,
// holds no memory past what was written, and is gone after Unmap (twice, or on nil,
// is harmless).
func TestMapUnwritten(t *testing.T) {
	if !on {
		t.Skip("huge-page tables are off here (not Linux, or GPTKIT_HUGEPAGES=0)")
	}
	m := MapUnwritten[int32](3 << 20) // 12 MB
	if len(m.S) != 3<<20 || m.raw == nil {
		t.Fatalf("len %d, mapped %v", len(m.S), m.raw != nil)
	}
	if at := uintptr(unsafe.Pointer(&m.S[0])); at%chunkBytes != 0 {
		t.Errorf("array at %#x, not 2 MB aligned", at)
	}
	for i := range 1024 {
		m.S[i] = int32(i) + 1
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&m.S[0])), len(m.S)*4)
	if n := resident(t, b[4<<20:]); n != 0 {
		t.Errorf("%d pages past the written ones are resident", n)
	}
	for i, v := range m.S {
		if want := int32(0); i < 1024 && v != int32(i)+1 || i >= 1024 && v != want {
			t.Fatalf("S[%d] = %d", i, v)
		}
	}
	raw := m.raw
	m.Unmap()
	if m.S != nil || m.raw != nil {
		t.Error("Unmap left the array")
	}
	m.Unmap()
	(*Mapped[int32])(nil).Unmap()
	// The pages are no longer mapped: mincore fails with ENOMEM.
	vec := make([]byte, len(raw)/pageBytes)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(raw))), uintptr(len(raw)), uintptr(unsafe.Pointer(&vec[0]))); errno != syscall.ENOMEM {
		t.Errorf("mincore after Unmap: %v, want ENOMEM (unmapped)", errno)
	}
	// Small arrays come from make.
	if s := MapUnwritten[byte](100); len(s.S) != 100 || s.raw != nil {
		t.Errorf("a 100-byte array: len %d, mapped %v", len(s.S), s.raw != nil)
	}
	defer func() {
		if recover() == nil {
			t.Error("an array of pointers was mapped")
		}
	}()
	MapUnwritten[*int](1 << 20)
}

// BenchmarkFreshMemory: the CPU a MB of fresh memory costs when first written (a
// mapping of 256 MB advised for huge pages, one byte a 4 KB page): first_cpu_ms/MB in
// the benchmark's first round, remapped_cpu_ms/MB in the later ones (the memory the
// round before unmapped), again_cpu_ms/MB when written a second time. On the 2-vCPU
// Firecracker VMs of docs/tokenizer-performance.md the first figure depends on how long
// the memory was free: the guest hands pages free for a few seconds back to the host
// (virtio-balloon's free page reporting), and taking them again costs the host's
// faults too; run it twice, ten seconds apart, to see it.
//
//	go test ./internal/hugemem -run '^$' -bench FreshMemory -benchtime 4x
func BenchmarkFreshMemory(b *testing.B) {
	const size = 256 << 20
	var first, remapped, again time.Duration
	rounds := 0
	for b.Loop() {
		raw, mem := mapHuge(size)
		if mem == nil {
			b.Skip("mmap failed")
		}
		c0 := processCPU()
		for i := 0; i < size; i += pageBytes {
			mem[i] = 1
		}
		c1 := processCPU()
		for i := 0; i < size; i += pageBytes {
			mem[i] = 2
		}
		c2 := processCPU()
		unmap(raw)
		if rounds == 0 {
			first = c1 - c0
		} else {
			remapped += c1 - c0
		}
		again += c2 - c1
		rounds++
	}
	perMB := func(d time.Duration, n int) float64 {
		return float64(d.Microseconds()) / 1000 / float64(n*size>>20)
	}
	b.ReportMetric(perMB(first, 1), "first_cpu_ms/MB")
	if rounds > 1 {
		b.ReportMetric(perMB(remapped, rounds-1), "remapped_cpu_ms/MB")
	}
	b.ReportMetric(perMB(again, rounds), "again_cpu_ms/MB")
}

// processCPU is this process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
