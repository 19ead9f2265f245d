package safetensors

import "unsafe"

// littleEndian reports whether this machine stores float32s little-endian, as the
// format does, so that tensor data can be copied without conversion.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// bytesOf views a float32 slice as its bytes (machine order).
func bytesOf(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}
