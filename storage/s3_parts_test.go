package storage

import "testing"

// TestPartCapGrows: parts start at PartSize, double every 1000 parts up to 512 MiB, and
// 10,000 of them hold a multi-terabyte object (a whole unsharded .bin of a big corpus).
func TestPartCapGrows(t *testing.T) {
	s := &s3Store{partSize: DefaultPartSize}
	for _, tc := range []struct {
		n    int32
		want int64
	}{{1, 8 << 20}, {1000, 8 << 20}, {1001, 16 << 20}, {3001, 64 << 20}, {6001, 512 << 20}, {10000, 512 << 20}} {
		if got := s.partCap(tc.n); got != tc.want {
			t.Errorf("part %d: %d bytes, want %d", tc.n, got, tc.want)
		}
	}
	var total int64
	for n := int32(1); n <= 10000; n++ {
		total += s.partCap(n)
	}
	if total < 2<<40 {
		t.Errorf("10,000 parts hold %d bytes; want over 2 TiB", total)
	}
	big := &s3Store{partSize: 1 << 30}
	if got := big.partCap(5000); got != 1<<30 {
		t.Errorf("a PartSize above the growth cap must stay as set, got %d", got)
	}
}
