//go:build !(amd64 || arm64 || 386 || ppc64le) || noasm

package inflate

import (
	"encoding/binary"
	"unsafe"
)

// load64 and store64 are 8-byte little-endian accesses at any address, a byte at a time
// where the machine is big-endian or may not load unaligned words.
func load64(p unsafe.Pointer) uint64 { return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(p), 8)) }

func store64(p unsafe.Pointer, v uint64) {
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(p), 8), v)
}
