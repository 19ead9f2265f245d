package tokenize

import "testing"

// TestWriteFault: writeFault leaves a slice as it was (zero, its length and capacity),
// whatever its element size, and takes an empty one.
func TestWriteFault(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 3 << 16} {
		b := writeFault(make([]byte, n))
		for i, v := range b {
			if v != 0 {
				t.Fatalf("%d bytes: byte %d is %d", n, i, v)
			}
		}
		s := writeFault(make([]shortSlot, n/16+1))
		if len(s) != n/16+1 || s[len(s)-1] != (shortSlot{}) {
			t.Fatalf("%d slots: %d long, last %+v", n/16+1, len(s), s[len(s)-1])
		}
	}
}
