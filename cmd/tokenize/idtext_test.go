package main

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestIDTextMatchesJSON: appendArray writes what encoding/json writes for the same ids,
// in the table and past it (the slow way), at every length.
func TestIDTextMatchesJSON(t *testing.T) {
	ft := newIDText(50257)
	rng := rand.New(rand.NewPCG(1, 2))
	var dst []byte
	for n := range 300 {
		ids := make([]int, n)
		for i := range ids {
			switch rng.IntN(10) {
			case 0:
				ids[i] = 50257 + rng.IntN(2_000_000) // past the table
			case 1:
				ids[i] = rng.IntN(10)
			default:
				ids[i] = rng.IntN(50257)
			}
		}
		want, _ := json.Marshal(ids)
		if n == 0 {
			want = []byte("[]")
		}
		dst = ft.appendArray(dst[:0], ids)
		if got := string(dst); got != string(want)+"\n" {
			t.Fatalf("%d ids: %q, want %q", n, got, want)
		}
	}
}

// TestAppendIDsFit: appendIDsFit fills a buffer's capacity without growing it and says
// how many ids it wrote; appendIDText into buffers of every small capacity gives the
// same text as into an empty one, and blocks filled in turn (idBlocks.format's way)
// join to it.
func TestAppendIDsFit(t *testing.T) {
	ft := newIDText(50257)
	ft.table()
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]int32, 5000)
	for i := range ids {
		ids[i] = int32(rng.IntN(50257))
		if i%97 == 0 {
			ids[i] = 1_234_567 // past the table: seven digits
		}
	}
	want := string(appendIDText(ft, nil, ids))
	for room := range 200 {
		dst := make([]byte, 3, 3+room)
		got, done := appendIDsFit(ft, dst, ids)
		if &got[0] != &dst[0] || len(got) > 3+room {
			t.Fatalf("room %d: the buffer grew (%d bytes)", room, len(got))
		}
		if string(got[3:]) != want[:len(got)-3] || done < len(ids) && len(got)-3 != len(appendIDText(ft, nil, ids[:done])) {
			t.Fatalf("room %d: %d ids written as %q", room, done, got[3:])
		}
		if room >= 16 && len(got)+16 > 3+room && done == 0 {
			t.Fatalf("room %d: nothing written", room)
		}
		if got := string(appendIDText(ft, make([]byte, 0, room), ids)); got != want {
			t.Fatalf("room %d: appendIDText gave %d bytes, want %d", room, len(got), len(want))
		}
		var joined []byte
		for rest := ids; len(rest) > 0; {
			b, n := appendIDsFit(ft, make([]byte, 0, 64+room), rest)
			joined, rest = append(joined, b...), rest[n:]
		}
		if string(joined) != want {
			t.Fatalf("room %d: blocks joined differ", room)
		}
	}
}

// BenchmarkAppendIDs: formatting GPT-2 ids (of English text's frequencies, roughly: a
// third of them below 1,000) as JSON, per id.
func BenchmarkAppendIDs(b *testing.B) {
	ft := newIDText(50257)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int, 1<<20)
	for i := range ids {
		if rng.IntN(3) == 0 {
			ids[i] = rng.IntN(1000)
		} else {
			ids[i] = rng.IntN(50257)
		}
	}
	var dst []byte
	b.SetBytes(int64(len(ids)))
	for b.Loop() {
		dst = ft.appendIDs(dst[:0], ids)
	}
}

// TestIDTextTable: every word of the table is its id's text, up to the largest table.
func TestIDTextTable(t *testing.T) {
	ft := newIDText(2_000_000)
	words := ft.table()
	if len(words) != 1_000_000 {
		t.Fatalf("%d words, want 1,000,000", len(words))
	}
	for id, w := range words {
		if w != idWord(id) {
			t.Fatalf("id %d: word %#x, want %#x", id, w, idWord(id))
		}
	}
}
