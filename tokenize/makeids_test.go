package tokenize

import (
	"runtime"
	"strings"
	"testing"
)

// TestMakeIDs: room for n ids, empty, and Encode's result (whose room it is) zero past
// its length, so that none of the memory it did not write can be seen.
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
	garbage := makeIDs[int](1 << 16)[:1<<16]
	for i := range garbage {
		garbage[i] = -1 // freed below: the memory the next allocations may get
	}
	garbage = nil
	runtime.GC()
	for _, text := range []string{"", "hello", strings.Repeat("The quick brown fox. ", 5000), strings.Repeat("x", 100000)} {
		ids := tok.Encode(text)
		for i, id := range ids[len(ids):cap(ids)] {
			if id != 0 {
				t.Fatalf("Encode of %d bytes: id %d past the result's length is %d", len(text), len(ids)+i, id)
			}
		}
	}
}
