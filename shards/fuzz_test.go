package shards

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzReadIdx: ParseIndex never panics and returns only *FormatErrors; what it accepts
// re-encodes to the same bytes and every entry it exposes is in range.
func FuzzReadIdx(f *testing.F) {
	for _, name := range []string{"neox_u16", "neox_i32", "neox_multi_u16", "neox_merged_u16"} {
		data, err := os.ReadFile(golden(name + ".idx"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		f.Add(data, true)
		f.Add(data[:len(data)/2], false)
	}
	f.Add(validIdx(), false)
	f.Add(rawIdx(1, 8, 1<<62, 1, nil, nil, []int64{0}), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, allowMerged bool) {
		var opts []Option
		if allowMerged {
			opts = append(opts, AllowMergedDocIdx())
		}
		ix, err := ParseIndex("fuzz.idx", data, opts...)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			return
		}
		if got := reencode(t, ix); !bytes.Equal(got, data) {
			t.Fatalf("accepted index does not round-trip")
		}
		var sum int64
		for i := 0; i < ix.Len(); i++ {
			if ix.Size(i) < 0 || ix.Pointer(i) != sum*int64(ix.DType().Size()) {
				t.Fatalf("entry %d inconsistent", i)
			}
			sum += int64(ix.Size(i))
		}
		if sum != ix.NumTokens() {
			t.Fatalf("NumTokens %d, sizes add to %d", ix.NumTokens(), sum)
		}
		_ = ix.CheckBinSize("fuzz.bin", ix.BinSize())
	})
}
