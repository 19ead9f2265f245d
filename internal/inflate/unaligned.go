//go:build (amd64 || arm64 || 386 || ppc64le) && !noasm

package inflate

import "unsafe"

// load64 and store64 are unaligned little-endian 8-byte accesses: one instruction each on
// these machines, which are little-endian and load and store at any address
// (unaligned_other.go is the portable twin, also built with -tags noasm).
func load64(p unsafe.Pointer) uint64 { return *(*uint64)(p) }

func store64(p unsafe.Pointer, v uint64) { *(*uint64)(p) = v }
