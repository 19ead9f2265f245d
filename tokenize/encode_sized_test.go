package tokenize

import (
	"slices"
	"strings"
	"testing"
)

// TestEncodeSized: Encode of a text of sizeBySampleFrom bytes or more (sized from its
// first part and samples of the rest, the rest encoded in parts) gives the ids
// AppendEncode gives (one pass into the caller's slice), whether the rest is denser than
// the first part, sparser (its capacity is cut back to a little spare room, all zeros),
// dense where the samples do not look (the slice grows between parts), or has no place
// to cut (sized from the last text).
func TestEncodeSized(t *testing.T) {
	// Sizes 1/16 of the command's (-race runs it too), the same logic.
	defer func(from, sample, spots, spot, part int) {
		sizeBySampleFrom, sampleBytes, sampleSpots, sampleSpotBytes, partBytes = from, sample, spots, spot, part
	}(sizeBySampleFrom, sampleBytes, sampleSpots, sampleSpotBytes, partBytes)
	sizeBySampleFrom, sampleBytes, sampleSpots, sampleSpotBytes, partBytes = 256<<10, 64<<10, 4, 2<<10, 16<<10
	var sparse, dense strings.Builder
	for _, d := range readGolden(t, "gpt2") {
		sparse.WriteString(d.Text)
		sparse.WriteString("\n")
	}
	for i := 0; dense.Len() < 3*sizeBySampleFrom/4; i++ {
		dense.WriteString("數據 7319 データ ")
		if i%8 == 7 {
			dense.WriteString("x\nA")
		}
	}
	var rare strings.Builder
	for i := 0; rare.Len() < 120<<10; i++ {
		rare.WriteRune(rune(0x20000 + i*7919%40000))
		if i%64 == 63 {
			rare.WriteString("x\nA")
		}
	}
	english := "the quick brown fox jumps over the lazy dog\nA"
	grow := func(s string, n int) string { return strings.Repeat(s, n/len(s)+1)[:n] }
	texts := map[string]string{
		"sparse then dense": grow(sparse.String(), sizeBySampleFrom/2) + "\nA" + dense.String(),
		"dense then sparse": dense.String()[:sizeBySampleFrom/2] + "x\nA" + grow(sparse.String(), 3*sizeBySampleFrom/4),
		"no cut":            strings.Repeat("abc def ", sizeBySampleFrom/8+1),
		// The samples of the rest start at multiples of a quarter of it (~250 KB
		// here, 2 KB each): a dense stretch between two of them (rare CJK, ~1
		// token a byte, in English of ~0.2) is met only as its parts are encoded,
		// and the slice grows.
		"dense between samples": grow(english, (64+290)<<10) + "\nA" + rare.String() + "x\nA" + grow(english, 600<<10),
	}
	for _, name := range []string{"gpt2", "cl100k_base"} {
		tok := sharedTokenizer(t, name)
		for what, text := range texts {
			text = strings.ToValidUTF8(text, "")
			if len(text) < sizeBySampleFrom {
				t.Fatalf("%s: %d bytes, fewer than sizeBySampleFrom", what, len(text))
			}
			got := tok.Encode(text)
			want := tok.AppendEncode(make([]int, 0, 16), text)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %s: %s", name, what, firstDiff(tok, text, got, want))
			}
			if spare := cap(got) - len(got); spare > len(got)/16+1024 {
				t.Errorf("%s, %s: %d ids with room for %d more", name, what, len(got), spare)
			}
			for i, id := range got[len(got):cap(got)] {
				if id != 0 {
					t.Fatalf("%s, %s: id %d past the result's length is %d", name, what, len(got)+i, id)
				}
			}
		}
	}
}
