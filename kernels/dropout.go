package kernels

// DropoutKeep reports whether element i survives dropout with probability p of
// being dropped, for the given seed. Every backend uses this one function (or an
// exact transcription of it on a device), so the mask is the same in forward and
// backward, on any number of threads and on any backend.
//
// The draw is the (i+1)-th output of a splitmix64 stream seeded with seed: a
// counter-based generator, so element i needs no state from element i-1. The top
// 24 bits are compared with p·2²⁴, so p is resolved to 2⁻²⁴.
func DropoutKeep(seed uint64, i int, p float32) bool {
	return dropoutBits(seed, i) >= dropoutThreshold(p)
}

// DropoutScale is the factor 1/(1-p) that kept elements are multiplied by,
// computed in float32 as every backend must.
func DropoutScale(p float32) float32 {
	return 1 / (1 - p)
}

// DropoutThreshold is the 24-bit threshold DropoutKeep compares with; exported for
// backends that inline the draw in a loop: keep = DropoutBits(seed, i) >= threshold.
func DropoutThreshold(p float32) uint32 { return dropoutThreshold(p) }

// DropoutBits is the 24-bit draw for element i (see DropoutKeep).
func DropoutBits(seed uint64, i int) uint32 { return dropoutBits(seed, i) }

func dropoutThreshold(p float32) uint32 {
	if !(p >= 0 && p < 1) {
		panic("kernels: dropout probability must be in [0, 1)")
	}
	return uint32(p * (1 << 24))
}

func dropoutBits(seed uint64, i int) uint32 {
	z := seed + (uint64(i)+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return uint32(z >> 40)
}
