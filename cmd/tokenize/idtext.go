package main

import (
	"encoding/binary"
	"slices"
	"strconv"
)

// idText writes token ids as JSON numbers from a table that holds each id's text: a
// comma and its decimal digits, packed little-endian into one word with their count in
// the top byte, so that an id costs one 8-byte store and an add (the byte above the
// text is overwritten by the next id, or left in the spare capacity). strconv.AppendInt,
// one division per digit, took more CPU than encoding the text the ids came from
// (docs/tokenizer-performance.md). Counting the digits with bits.LeadingZeros64 of the
// word took ~15% longer; two small tables (id/1000 and id%1000, 24 KB) instead of this
// one (400 KB for GPT-2) took twice as long: its loads mostly hit the caches.
type idText struct {
	words []uint64 // id -> ',' and its digits, little-endian; their count in the top byte
}

// newIDText builds the table for ids below vocab (at most 10^6, so that ',' and six
// digits fit the word below its count). Ids from 1,000 up are the word of id/1000 with
// the three digits of id%1000 after it: o200k_base's 200,000 ids by strconv took ~3 ms,
// a twentieth of a process that encodes nothing.
func newIDText(vocab int) *idText {
	n := min(vocab, 1_000_000)
	t := &idText{words: make([]uint64, n)}
	for id := range min(n, 1000) {
		t.words[id] = idWord(id)
	}
	for hi := 1; hi*1000 < n; hi++ {
		head := idWord(hi)
		size := head >> 56
		head &^= 0xff << 56
		for lo, id := 0, hi*1000; lo < 1000 && id < n; lo, id = lo+1, id+1 {
			digits := uint64('0'+lo/100) | uint64('0'+lo/10%10)<<8 | uint64('0'+lo%10)<<16
			t.words[id] = head | digits<<(8*size) | (size+3)<<56
		}
	}
	return t
}

// idWord is the table's word of id (below 10^6).
func idWord(id int) uint64 {
	var buf [16]byte
	b := strconv.AppendInt(append(buf[:0], ','), int64(id), 10)
	var w uint64
	for i := len(b) - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	return w | uint64(len(b))<<56
}

// appendIDs appends ",id" for each id; ids outside the table take the slow way.
func (t *idText) appendIDs(dst []byte, ids []int) []byte {
	dst = slices.Grow(dst, 8*len(ids)+8)
	n := len(dst)
	buf := dst[:cap(dst)]
	for i, id := range ids {
		if uint(id) >= uint(len(t.words)) {
			dst = strconv.AppendInt(append(buf[:n], ','), int64(id), 10)
			dst = slices.Grow(dst, 8*(len(ids)-i)+8)
			n, buf = len(dst), dst[:cap(dst)]
			continue
		}
		w := t.words[id]
		binary.LittleEndian.PutUint64(buf[n:n+8], w)
		n += int(w >> 56)
	}
	return buf[:n]
}

// appendArray appends ids as one JSON array and a newline.
func (t *idText) appendArray(dst []byte, ids []int) []byte {
	if len(ids) == 0 {
		return append(dst, "[]\n"...)
	}
	start := len(dst)
	dst = t.appendIDs(dst, ids)
	dst[start] = '['
	return append(dst, ']', '\n')
}
