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
