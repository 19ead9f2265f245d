package tokenize

import (
	"strings"
	"testing"
)

// TestMakeIDs: room for n ids, empty, and Encode's result (whose room it is) cut to its
// length, so that none of the memory it did not write can be seen.
func TestMakeIDs(t *testing.T) {
	for _, n := range []int{0, 1, 100, 1000, 1 << 20} {
		ids := makeIDs[int32](n)
		if len(ids) != 0 || cap(ids) < n {
			t.Fatalf("makeIDs(%d): len %d cap %d", n, len(ids), cap(ids))
		}
		for i := range n {
			ids = append(ids, int32(i))
		}
		for i, id := range ids {
			if id != int32(i) {
				t.Fatalf("makeIDs(%d): id %d reads %d", n, i, id)
			}
		}
	}
	tok := sharedTokenizer(t, "gpt2")
	for _, text := range []string{"", "hello", strings.Repeat("The quick brown fox. ", 5000)} {
		if ids := tok.Encode(text); cap(ids) != len(ids) {
			t.Fatalf("Encode of %d bytes: len %d cap %d", len(text), len(ids), cap(ids))
		}
	}
}
