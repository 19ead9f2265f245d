package main

import (
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// idText writes token ids as JSON numbers from a table that holds each id's text: a
// comma and its decimal digits, packed little-endian into one word with their count in
// the top byte, so that an id costs one 8-byte store and an add (the byte above the
// text is overwritten by the next id, or left in the spare capacity). strconv.AppendInt,
// one division per digit, took more CPU than encoding the text the ids came from
// (docs/tokenizer-performance.md). Counting the digits with bits.LeadingZeros64 of the
// word took ~15% longer; two small tables (id/1000 and id%1000, 24 KB) instead of this
// one (400 KB for GPT-2) took twice as long: its loads mostly hit the caches.
//
// The table is made once the command has written a sixteenth as many ids as it holds;
// the ids before go through strconv (a line of text should not pay for 200,000 words:
// o200k_base's table takes ~2 ms to make, a twentieth of a process that encodes
// nothing).
type idText struct {
	vocab int
	slow  atomic.Int64 // ids written before the table
	once  sync.Once
	ready atomic.Bool // words is made
	words []uint64    // id -> ',' and its digits, little-endian; their count in the top byte
}

// newIDText returns the writer of ids below vocab (at most 10^6 from the table, so that
// ',' and six digits fit the word below its count; larger ones by strconv).
func newIDText(vocab int) *idText { return &idText{vocab: vocab} }

// table returns the table, made on first use. Ids from 1,000 up are the word of id/1000
// with the three digits of id%1000 after it (o200k_base's 200,000 ids by strconv took
// ~3 ms).
func (t *idText) table() []uint64 {
	t.once.Do(func() {
		n := min(t.vocab, 1_000_000)
		words := make([]uint64, n)
		for id := range min(n, 1000) {
			words[id] = idWord(id)
		}
		for hi := 1; hi*1000 < n; hi++ {
			head := idWord(hi)
			size := head >> 56
			head &^= 0xff << 56
			for lo, id := 0, hi*1000; lo < 1000 && id < n; lo, id = lo+1, id+1 {
				digits := uint64('0'+lo/100) | uint64('0'+lo/10%10)<<8 | uint64('0'+lo%10)<<16
				words[id] = head | digits<<(8*size) | (size+3)<<56
			}
		}
		t.words = words
		t.ready.Store(true)
	})
	return t.words
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

// appendIDs appends ",id" for each id; ids outside the table (every id before it is
// made) take the slow way.
func (t *idText) appendIDs(dst []byte, ids []int) []byte { return appendIDText(t, dst, ids) }

// appendIDText is appendIDs for ids of either width. It fills dst's spare capacity
// first and grows dst only for the ids that do not fit: growing it as soon as the room
// was under 8 bytes an id (each id's most, where they average ~6) copied most of
// `encode --jsonl`'s output once more into fresh memory.
func appendIDText[I int | int32](t *idText, dst []byte, ids []I) []byte {
	for {
		var done int
		dst, done = appendIDsFit(t, dst, ids)
		if ids = ids[done:]; len(ids) == 0 {
			return dst
		}
		dst = slices.Grow(dst, 8*len(ids)+8)
	}
}

// appendIDsFit appends the text of as many of ids as fit in dst's capacity (all but a
// few bytes of it), without growing it (but for an id of 10^7 or more), and says how
// many.
func appendIDsFit[I int | int32](t *idText, dst []byte, ids []I) ([]byte, int) {
	done := 0
	for done < len(ids) {
		// Room for k ids at their most; they take less, and the next turn fills
		// what they left.
		k := min(len(ids)-done, (cap(dst)-len(dst)-8)/8)
		if k <= 0 {
			break
		}
		dst = appendIDsRoom(t, dst, ids[done:done+k])
		done += k
	}
	return dst, done
}

// appendIDsRoom appends the text of ids into dst, which has room for 8·len(ids)+8
// bytes (an id's text is at most 7 bytes below 10^6; dst grows for larger ones).
func appendIDsRoom[I int | int32](t *idText, dst []byte, ids []I) []byte {
	var words []uint64
	if t.ready.Load() {
		words = t.words
	} else if t.slow.Add(int64(len(ids))) > int64(min(t.vocab, 1_000_000)/16) {
		words = t.table()
	}
	n := len(dst)
	buf := dst[:cap(dst)]
	i := 0
	if size := uint(len(words)); size > 0 {
		// Four ids a turn, stored through a pointer: buf has 8 bytes of room for each
		// id left and one more, and an id's text is at most 7 bytes, so every store is
		// inside it (the checks of buf[n:n+8] were a third of the loop's instructions).
		base := unsafe.Pointer(unsafe.SliceData(buf))
		for ; i+4 <= len(ids); i += 4 {
			a, b, c, d := uint(ids[i]), uint(ids[i+1]), uint(ids[i+2]), uint(ids[i+3])
			if a >= size || b >= size || c >= size || d >= size {
				break
			}
			wa, wb, wc, wd := words[a], words[b], words[c], words[d]
			*(*uint64)(unsafe.Add(base, n)) = wa
			n += int(wa >> 56)
			*(*uint64)(unsafe.Add(base, n)) = wb
			n += int(wb >> 56)
			*(*uint64)(unsafe.Add(base, n)) = wc
			n += int(wc >> 56)
			*(*uint64)(unsafe.Add(base, n)) = wd
			n += int(wd >> 56)
		}
	}
	for ; i < len(ids); i++ {
		id := ids[i]
		if uint(id) >= uint(len(words)) {
			dst = strconv.AppendInt(append(buf[:n], ','), int64(id), 10)
			dst = slices.Grow(dst, 8*(len(ids)-i-1)+8) // the ids after this one
			n, buf = len(dst), dst[:cap(dst)]
			continue
		}
		w := words[id]
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
