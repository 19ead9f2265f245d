package sim

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"unsafe"
)

// Device memory is Go memory: an allocation is a []byte whose address is its
// device address, so a host that holds a slice of it (the CUDA backend's
// managed-memory model) and a kernel see the same bytes. The simulator keeps a
// table of allocations to check every access against: an address outside every
// live allocation, or one that runs past the end of its allocation, is a fault.

// Align is the alignment of every allocation (cudaMalloc's 256 bytes).
const Align = 256

// ErrOutOfMemory is returned when an allocation exceeds the device's free memory.
var ErrOutOfMemory = errors.New("out of device memory")

// Alloc is one allocation.
type Alloc struct {
	Base uint64 // device address (= the address of Buf[0])
	Buf  []byte // len(Buf) is the allocation's size
	What string // "device", "managed", "pinned host", "module global ..."
}

// Memory is the allocation table of a device.
type Memory struct {
	mu     sync.RWMutex
	allocs []*Alloc // sorted by Base
	total  uint64
	used   uint64
}

func newMemory(total uint64) *Memory { return &Memory{total: total} }

// Info returns the free and total bytes (cuMemGetInfo).
func (m *Memory) Info() (free, total uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.total - m.used, m.total
}

// Allocate returns a zeroed allocation of size bytes aligned to Align.
func (m *Memory) Allocate(size int, what string) (*Alloc, error) {
	if size < 0 {
		return nil, fmt.Errorf("sim: allocate %d bytes", size)
	}
	n := max(size, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if uint64(n) > m.total-m.used {
		return nil, fmt.Errorf("sim: %w: %d bytes asked, %d of %d free", ErrOutOfMemory, n, m.total-m.used, m.total)
	}
	raw := make([]byte, n+Align)
	off := (Align - int(uintptr(unsafe.Pointer(&raw[0]))%Align)) % Align
	a := &Alloc{Buf: raw[off : off+size : off+n], What: what}
	a.Base = uint64(uintptr(unsafe.Pointer(&raw[off])))
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].Base > a.Base })
	m.allocs = append(m.allocs, nil)
	copy(m.allocs[i+1:], m.allocs[i:])
	m.allocs[i] = a
	m.used += uint64(n)
	return a, nil
}

// Free releases the allocation that starts at base.
func (m *Memory) Free(base uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].Base >= base })
	if i == len(m.allocs) || m.allocs[i].Base != base {
		return fmt.Errorf("sim: free of %#x, which is not the start of an allocation", base)
	}
	m.used -= uint64(max(len(m.allocs[i].Buf), 1))
	m.allocs = append(m.allocs[:i], m.allocs[i+1:]...)
	return nil
}

// find returns the allocation holding addr, or nil.
func (m *Memory) find(addr uint64) *Alloc {
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].Base > addr })
	if i == 0 {
		return nil
	}
	a := m.allocs[i-1]
	if addr-a.Base < uint64(len(a.Buf)) {
		return a
	}
	return nil
}

// Lookup returns the allocation holding addr (nil when none).
func (m *Memory) Lookup(addr uint64) *Alloc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.find(addr)
}

// Bytes returns the n bytes at addr, which must lie in one allocation.
func (m *Memory) Bytes(addr uint64, n int) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bytes(addr, n)
}

func (m *Memory) bytes(addr uint64, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	a := m.find(addr)
	if a == nil {
		return nil, fmt.Errorf("address %#x is in no allocation", addr)
	}
	off := addr - a.Base
	if n < 0 || off+uint64(n) > uint64(len(a.Buf)) {
		return nil, fmt.Errorf("%d bytes at %#x run %d bytes past the end of the %d-byte %s allocation at %#x",
			n, addr, off+uint64(n)-uint64(len(a.Buf)), len(a.Buf), a.What, a.Base)
	}
	return a.Buf[off : off+uint64(n) : off+uint64(n)], nil
}

// describe says where addr lies, for messages.
func (m *Memory) describe(addr uint64, n int) string {
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].Base > addr })
	if i > 0 {
		a := m.allocs[i-1]
		off := addr - a.Base
		if off < uint64(len(a.Buf)) {
			return fmt.Sprintf("%d bytes past the end of the %d-byte %s allocation at %#x", off+uint64(n)-uint64(len(a.Buf)), len(a.Buf), a.What, a.Base)
		}
		return fmt.Sprintf("in no allocation (%d bytes past the end of the %d-byte %s allocation at %#x)", off-uint64(len(a.Buf)), len(a.Buf), a.What, a.Base)
	}
	if len(m.allocs) > 0 {
		return fmt.Sprintf("in no allocation (%d bytes before the first, at %#x)", m.allocs[0].Base-addr, m.allocs[0].Base)
	}
	return "in no allocation (none exist)"
}

// Windows of the generic address space (cvta): shared and local addresses map
// above everything Go's heap uses, so generic loads can tell the spaces apart.
const (
	sharedWindow = 0xffff_e000_0000_0000
	localWindow  = 0xffff_f000_0000_0000
	windowSize   = 1 << 40
)
