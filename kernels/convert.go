package kernels

import (
	"fmt"
	"math"
	"unsafe"
)

// DecodeFloat32 widens n = len(dst) elements of dtype dt from raw host bytes (a
// host tensor's HostBytes, or what Download wrote) into dst, exactly.
func DecodeFloat32(dst []float32, src []byte, dt DType) {
	n := len(dst)
	if len(src) < n*dt.Size() {
		panic(fmt.Sprintf("kernels: decode %d %s from %d bytes", n, dt, len(src)))
	}
	if n == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(src))
	switch dt {
	case Float32:
		copy(dst, unsafe.Slice((*float32)(p), n))
	case BFloat16:
		for i, h := range unsafe.Slice((*uint16)(p), n) {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
	case Float16:
		for i, h := range unsafe.Slice((*uint16)(p), n) {
			dst[i] = F16ToFloat32(h)
		}
	default:
		panic("kernels: decode float32 from " + dt.String())
	}
}

// EncodeFloat32 rounds src to dtype dt (to nearest even) into raw bytes dst.
func EncodeFloat32(dst []byte, src []float32, dt DType) {
	n := len(src)
	if len(dst) < n*dt.Size() {
		panic(fmt.Sprintf("kernels: encode %d %s into %d bytes", n, dt, len(dst)))
	}
	if n == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(dst))
	switch dt {
	case Float32:
		copy(unsafe.Slice((*float32)(p), n), src)
	case BFloat16:
		h := unsafe.Slice((*uint16)(p), n)
		for i, x := range src {
			h[i] = BF16FromFloat32(x)
		}
	case Float16:
		h := unsafe.Slice((*uint16)(p), n)
		for i, x := range src {
			h[i] = F16FromFloat32(x)
		}
	default:
		panic("kernels: encode float32 as " + dt.String())
	}
}

// ReadFloat32 returns a host tensor's values widened to float32 (a copy).
func ReadFloat32(t Tensor) []float32 {
	out := make([]float32, t.Len())
	DecodeFloat32(out, t.HostBytes(), t.DType())
	return out
}

// WriteFloat32 stores src into a host tensor, rounded to its dtype.
func WriteFloat32(t Tensor, src []float32) {
	if len(src) != t.Len() {
		panic(fmt.Sprintf("kernels: write %d values into %s", len(src), t))
	}
	EncodeFloat32(t.HostBytes(), src, t.DType())
}

// DownloadFloat32 copies a tensor of any floating dtype from be into a new
// float32 slice (exact widening).
func DownloadFloat32(be Backend, t Tensor) []float32 {
	if t.DType() == Float32 {
		out := make([]float32, t.Len())
		be.Download(Float32Bytes(out), t)
		return out
	}
	raw := make([]byte, t.Bytes())
	be.Download(raw, t)
	out := make([]float32, t.Len())
	DecodeFloat32(out, raw, t.DType())
	return out
}

// UploadFloat32 stores src into t on be, rounded to t's dtype.
func UploadFloat32(be Backend, t Tensor, src []float32) {
	if len(src) != t.Len() {
		panic(fmt.Sprintf("kernels: upload %d values into %s", len(src), t))
	}
	if t.DType() == Float32 {
		be.Upload(t, Float32Bytes(src))
		return
	}
	raw := make([]byte, t.Bytes())
	EncodeFloat32(raw, src, t.DType())
	be.Upload(t, raw)
}
