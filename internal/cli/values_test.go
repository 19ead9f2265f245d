package cli

import (
	"strings"
	"testing"
)

// TestParseSize: sizes with units in any case; anything else is an error (fmt.Sscan
// read "4G" as 4 bytes and "1.5GB" as 1 GB).
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "64KB": 64e3, "500MB": 500e6, "4GiB": 4 << 30, "1TB": 1e12, "4gib": 4 << 30, " 2 MiB ": 2 << 20, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"4G", "500M", "2k", "1e9", "1.5", "1.5GB", "0x10", "", "-1", "GB", "99999999999TB", "1 2MB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseSize(%q): %v", in, err)
		}
	}
}

// FuzzParseSize: no input panics, and an accepted size is never negative.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4GiB", "4G", "1.5GB", "99999999999TB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}
