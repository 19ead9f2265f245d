package kernels

import (
	"fmt"
	"unsafe"
)

// Buffer is one allocation of a backend's memory (Backend.Alloc), or host memory
// wrapped by Host and its siblings. Tensors are typed views of a Buffer.
type Buffer struct {
	owner any     // the Backend that allocated it; nil for wrapped host memory
	addr  uintptr // the address of byte 0 as the owner's kernels see it
	host  []byte  // the bytes when the host can address them (host backends); nil on a device
	size  int     // bytes
	what  string  // what it holds, for messages and memory accounts
}

// NewBuffer describes an allocation of size bytes at addr made by owner, for a
// backend's Alloc. host is the same memory as bytes when the host can address it
// (host backends), nil for device memory.
func NewBuffer(owner any, addr uintptr, host []byte, size int, what string) *Buffer {
	if host != nil && len(host) < size {
		panic("kernels: NewBuffer: host memory shorter than the buffer")
	}
	return &Buffer{owner: owner, addr: addr, host: host, size: size, what: what}
}

// Addr is the address of the buffer's first byte as its owner sees it.
func (b *Buffer) Addr() uintptr { return b.addr }

// Size is the buffer's bytes.
func (b *Buffer) Size() int { return b.size }

// Tensor is a typed, flat view of a Buffer: Len elements of DType starting at an
// offset. The zero Tensor is "none" (an optional argument left out). Tensors are
// small values; copying one copies the view, not the data.
type Tensor struct {
	buf *Buffer
	off int // bytes from the start of buf
	n   int
	dt  DType
}

// NewTensor views buf's first n elements of dt (a backend's Alloc returns it).
func NewTensor(buf *Buffer, dt DType, n int) Tensor {
	if n < 0 || n*dt.Size() > buf.size {
		panic(fmt.Sprintf("kernels: %d %s elements do not fit a buffer of %d bytes", n, dt, buf.size))
	}
	return Tensor{buf: buf, n: n, dt: dt}
}

// Host wraps host memory as a Float32 tensor, for the backends that compute on
// host memory (HostMemory): e.g. buffers the data-parallel collectives share
// between processes. The tensor aliases x.
func Host(x []float32) Tensor {
	return hostTensor(unsafe.Pointer(unsafe.SliceData(x)), len(x), Float32)
}

// HostInt32 wraps host int32s (token ids) as an Int32 tensor aliasing x.
func HostInt32(x []int32) Tensor {
	return hostTensor(unsafe.Pointer(unsafe.SliceData(x)), len(x), Int32)
}

// HostFloat64 wraps host float64s as a Float64 tensor aliasing x.
func HostFloat64(x []float64) Tensor {
	return hostTensor(unsafe.Pointer(unsafe.SliceData(x)), len(x), Float64)
}

// HostUint16 wraps host 16-bit values as a BFloat16 or Float16 tensor aliasing x.
func HostUint16(x []uint16, dt DType) Tensor {
	if dt.Size() != 2 {
		panic("kernels: HostUint16 of " + dt.String())
	}
	return hostTensor(unsafe.Pointer(unsafe.SliceData(x)), len(x), dt)
}

func hostTensor(p unsafe.Pointer, n int, dt DType) Tensor {
	size := n * dt.Size()
	var host []byte
	if n > 0 {
		host = unsafe.Slice((*byte)(p), size)
	} else {
		host = []byte{}
	}
	return Tensor{buf: &Buffer{addr: uintptr(p), host: host, size: size, what: "host memory"}, n: n, dt: dt}
}

// Nil reports whether t is the zero Tensor (no tensor).
func (t Tensor) Nil() bool { return t.buf == nil }

// DType is the element type.
func (t Tensor) DType() DType { return t.dt }

// Len is the number of elements.
func (t Tensor) Len() int { return t.n }

// Bytes is the size of the view in bytes.
func (t Tensor) Bytes() int {
	if t.buf == nil {
		return 0
	}
	return t.n * t.dt.Size()
}

// Buffer is the allocation t views.
func (t Tensor) Buffer() *Buffer { return t.buf }

// Owner is the backend that allocated t's memory (nil for wrapped host memory and
// for the zero Tensor).
func (t Tensor) Owner() any {
	if t.buf == nil {
		return nil
	}
	return t.buf.owner
}

// What says what t's allocation holds (Alloc's what).
func (t Tensor) What() string {
	if t.buf == nil {
		return "none"
	}
	return t.buf.what
}

// Addr is the address of t's first element as its owner's kernels see it (a
// device address on a GPU).
func (t Tensor) Addr() uintptr {
	if t.buf == nil {
		return 0
	}
	return t.buf.addr + uintptr(t.off)
}

// Offset is the byte offset of t's first element in its Buffer.
func (t Tensor) Offset() int { return t.off }

// Slice returns elements [lo, hi) of t, a view of the same memory.
func (t Tensor) Slice(lo, hi int) Tensor {
	if lo < 0 || hi < lo || hi > t.n {
		panic(fmt.Sprintf("kernels: slice [%d:%d] of a tensor of %d elements", lo, hi, t.n))
	}
	return Tensor{buf: t.buf, off: t.off + lo*t.dt.Size(), n: hi - lo, dt: t.dt}
}

// Whole is the tensor of t's whole Buffer in t's dtype (what Free takes).
func (t Tensor) Whole() Tensor {
	return Tensor{buf: t.buf, n: t.buf.size / t.dt.Size(), dt: t.dt}
}

// IsHost reports whether the host can address t's memory (host backends and
// wrapped host memory): then HostBytes and the typed views work.
func (t Tensor) IsHost() bool { return t.buf != nil && t.buf.host != nil }

// HostBytes is t's memory as bytes; it panics unless IsHost.
func (t Tensor) HostBytes() []byte {
	if !t.IsHost() {
		panic(fmt.Sprintf("kernels: %s is not in host memory", t))
	}
	b := t.buf.host[t.off : t.off+t.n*t.dt.Size()]
	return b[:len(b):len(b)]
}

func (t Tensor) hostPtr(dt DType) unsafe.Pointer {
	if t.dt != dt && !(dt == BFloat16 && t.dt == Float16) {
		panic(fmt.Sprintf("kernels: %s viewed as %s", t, dt))
	}
	if !t.IsHost() {
		panic(fmt.Sprintf("kernels: %s is not in host memory", t))
	}
	if t.n == 0 {
		return nil
	}
	return unsafe.Pointer(&t.buf.host[t.off])
}

// Float32s is a Float32 tensor's host memory (zero-copy); it panics for another
// dtype or device memory.
func (t Tensor) Float32s() []float32 {
	p := t.hostPtr(Float32)
	if p == nil {
		return []float32{}
	}
	return unsafe.Slice((*float32)(p), t.n)
}

// Uint16s is a BFloat16 or Float16 tensor's host memory as raw 16-bit values.
func (t Tensor) Uint16s() []uint16 {
	p := t.hostPtr(BFloat16)
	if p == nil {
		return []uint16{}
	}
	return unsafe.Slice((*uint16)(p), t.n)
}

// Int32s is an Int32 tensor's host memory.
func (t Tensor) Int32s() []int32 {
	p := t.hostPtr(Int32)
	if p == nil {
		return []int32{}
	}
	return unsafe.Slice((*int32)(p), t.n)
}

// Float64s is a Float64 tensor's host memory.
func (t Tensor) Float64s() []float64 {
	p := t.hostPtr(Float64)
	if p == nil {
		return []float64{}
	}
	return unsafe.Slice((*float64)(p), t.n)
}

// String describes t, e.g. "bfloat16[4096] of activations".
func (t Tensor) String() string {
	if t.buf == nil {
		return "no tensor"
	}
	return fmt.Sprintf("%s[%d] of %s", t.dt, t.n, t.buf.what)
}

// Overlaps reports whether t and u share any byte of memory (host memory by its
// address, whoever wrapped it; device memory of one owner by its address).
func (t Tensor) Overlaps(u Tensor) bool {
	if t.buf == nil || u.buf == nil || t.n == 0 || u.n == 0 {
		return false
	}
	var a, b uintptr
	switch {
	case t.IsHost() && u.IsHost():
		a, b = uintptr(unsafe.Pointer(&t.buf.host[t.off])), uintptr(unsafe.Pointer(&u.buf.host[u.off]))
	case t.buf.owner == u.buf.owner && t.buf.owner != nil:
		a, b = t.Addr(), u.Addr()
	default:
		return false
	}
	return a < b+uintptr(u.Bytes()) && b < a+uintptr(t.Bytes())
}

// Same reports whether t and u are the same view (same memory, dtype, length).
func (t Tensor) Same(u Tensor) bool { return t == u }

// Bytes of host values, for Upload and Download.

// Float32Bytes is x's memory as bytes (no copy).
func Float32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// Int32Bytes is x's memory as bytes (no copy).
func Int32Bytes(x []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// Float64Bytes is x's memory as bytes (no copy).
func Float64Bytes(x []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}

// Uint16Bytes is x's memory as bytes (no copy).
func Uint16Bytes(x []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}
