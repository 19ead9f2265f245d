package loader

const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// MT19937 is the Mersenne Twister exactly as numpy's legacy
// np.random.RandomState uses it. The zero value is not usable; create one
// with [NewMT19937].
type MT19937 struct {
	key [mtN]uint32
	pos int
}

// NewMT19937 returns the generator of np.random.RandomState(seed) for an
// integer seed: numpy's legacy seeding passes a scalar seed in [0, 2^32) to
// mt19937_seed, which is the reference init_genrand (not init_by_array,
// which numpy uses only for array seeds). GPT-NeoX seeds every GPT2Dataset
// index build this way (default seed 1234).
func NewMT19937(seed uint32) *MT19937 {
	r := &MT19937{}
	r.Seed(seed)
	return r
}

// Seed resets r to the state of np.random.RandomState(seed).
func (r *MT19937) Seed(seed uint32) {
	s := seed
	for i := 0; i < mtN; i++ {
		r.key[i] = s
		s = 1812433253*(s^(s>>30)) + uint32(i+1)
	}
	r.pos = mtN
}

func (r *MT19937) generate() {
	k := &r.key
	var i int
	for i = 0; i < mtN-mtM; i++ {
		y := (k[i] & mtUpperMask) | (k[i+1] & mtLowerMask)
		k[i] = k[i+mtM] ^ (y >> 1) ^ (-(y & 1) & mtMatrixA)
	}
	for ; i < mtN-1; i++ {
		y := (k[i] & mtUpperMask) | (k[i+1] & mtLowerMask)
		k[i] = k[i+(mtM-mtN)] ^ (y >> 1) ^ (-(y & 1) & mtMatrixA)
	}
	y := (k[mtN-1] & mtUpperMask) | (k[0] & mtLowerMask)
	k[mtN-1] = k[mtM-1] ^ (y >> 1) ^ (-(y & 1) & mtMatrixA)
	r.pos = 0
}

// Uint32 returns the next raw 32-bit output (numpy's next_uint32; the words
// RandomState.bytes exposes little-endian).
func (r *MT19937) Uint32() uint32 {
	if r.pos == mtN {
		r.generate()
	}
	y := r.key[r.pos]
	r.pos++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Uint64 returns numpy's next_uint64 for MT19937: two 32-bit outputs, the
// first one in the high half.
func (r *MT19937) Uint64() uint64 {
	hi := uint64(r.Uint32())
	return hi<<32 | uint64(r.Uint32())
}

// Interval returns a value in [0, max] the way numpy's random_interval does:
// masked rejection sampling with mask = the smallest 2^k-1 >= max, drawing
// Uint32 when max fits in 32 bits and Uint64 otherwise. It consumes nothing
// when max is 0. The same values come out of legacy
// RandomState.randint(0, max+1, dtype=np.uint64).
func (r *MT19937) Interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := max
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	mask |= mask >> 32
	if max <= 0xffffffff {
		m32 := uint32(mask)
		for {
			if v := uint64(r.Uint32() & m32); v <= max {
				return v
			}
		}
	}
	for {
		if v := r.Uint64() & mask; v <= max {
			return v
		}
	}
}

// shuffle is numpy's legacy RandomState.shuffle on a 1-D array: for
// i = n-1 down to 1, swap a[i] with a[random_interval(i)].
func shuffle[T any](r *MT19937, a []T) {
	for i := len(a) - 1; i > 0; i-- {
		j := r.Interval(uint64(i))
		a[i], a[j] = a[j], a[i]
	}
}

// ShuffleInt32 shuffles a in place exactly as RandomState.shuffle does for a
// 1-D numpy array (the element type does not change the permutation).
func (r *MT19937) ShuffleInt32(a []int32) { shuffle(r, a) }

// ShuffleUint32 shuffles a in place exactly as RandomState.shuffle does for a
// 1-D numpy array.
func (r *MT19937) ShuffleUint32(a []uint32) { shuffle(r, a) }

// ShuffleInt64 shuffles a in place exactly as RandomState.shuffle does for a
// 1-D numpy array; GPT-NeoX switches shuffle_idx to int64 for 2^32-2 or more
// samples.
func (r *MT19937) ShuffleInt64(a []int64) { shuffle(r, a) }
