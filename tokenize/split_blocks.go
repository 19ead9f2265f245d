package tokenize

import (
	"math/bits"
	"unsafe"
)

// The block splitters: a pre-tokenizer that finds the piece starts of 64 bytes at once,
// in bit arithmetic over the block's class masks (classify.go), where the block allows
// it, and a piece at a time elsewhere.

// blockRules is one pattern's pair of scanners.
type blockRules struct {
	// ok reports whether block can do the block that starts at B.
	ok func(w *classWindow, B int) bool
	// block ORs into *starts the piece starts of the block at B (bit p = byte B+p),
	// given that a piece starts at after (when after ≥ B) and the state carry from the
	// block before (when after < B), and returns the carry to the next block, with
	// notNext set when ok is false for the next block. Starts at
	// or before after are dropped by the caller; block may set them.
	block func(w *classWindow, s string, B, after int, carry blockCarry) (starts uint64, next blockCarry)
	// pieceEnd returns the end of the piece that starts at i.
	pieceEnd func(w *classWindow, s string, i int) int
}

// blockCarry is what one block hands to the next: the starts that a contraction at the
// end of the block moves (bits of the next block), and the pattern's own state.
type blockCarry struct {
	force, suppress uint64
	// cl100k: the byte before the block ends a letter prefix (J); is a CRLF taken into
	// a run of "other" (absorbed); the next block's bit where the current run of
	// numbers starts its next group of three (digitStart).
	prefix, absorbed, digitStart uint64
	// notNext: the rules' ok is false for the next block (block says so from the masks
	// it has at hand, sparing splitBlocks a call of ok per block).
	notNext bool
}

// splitBlocks is a splitter running r: whole blocks from the first piece start in a
// block r.ok accepts, one piece at a time (r.pieceEnd) from the last start found before
// a block it does not, until a piece ends in a block it does.
func splitBlocks(r *blockRules, w *classWindow, s string, from int, ends []int) []int {
	n := len(s)
	i := from // a piece starts here
	scalar := false
	for i < n && len(ends) < cap(ends) {
		B := i &^ 63
		if !scalar && cap(ends)-len(ends) > 64 && r.ok(w, B) {
			var carry blockCarry
			last := i
			for after := i; ; after = -1 {
				var starts uint64
				starts, carry = r.block(w, s, B, after, carry)
				if after >= B {
					starts &^= 2<<uint(after-B) - 1
				}
				if B+64 > n {
					starts &= 1<<uint(n-B) - 1
				}
				// ends has room for the block's starts (more than 64 free): no
				// append's check per start.
				if starts != 0 {
					k := len(ends)
					ends = ends[:k+bits.OnesCount64(starts)]
					p := unsafe.Pointer(&ends[k])
					for ; starts != 0; starts &= starts - 1 {
						*(*int)(p) = B + bits.TrailingZeros64(starts)
						p = unsafe.Add(p, unsafe.Sizeof(int(0)))
					}
					last = ends[len(ends)-1]
				}
				if B += 64; B >= n {
					return append(ends, n)
				}
				if cap(ends)-len(ends) <= 64 && len(ends) > 0 {
					// ends is full: the caller goes on from the last start found,
					// which starts the block path again there (no carry is needed
					// at a piece start). Going on a piece at a time instead sent
					// the last 64 of every pieceBatch pieces through pieceEnd.
					return ends
				}
				if carry.notNext {
					break
				}
			}
			// The piece that starts at last ends in a block r.block cannot do: go on a
			// piece at a time from there.
			i, scalar = last, true
			continue
		}
		i, scalar = r.pieceEnd(w, s, i), false
		ends = append(ends, i)
	}
	return ends
}

// blockContext is the masks of a block and of the bytes just before and after it.
type blockContext struct {
	cur        *classBlock
	prev, next *classBlock // nil at the ends of the text
	valid      uint64      // bytes below len(s)
	validNext  uint64      // bytes p with p+1 below len(s)
}

func newBlockContext(w *classWindow, s string, B int) blockContext {
	k := w.block(B) & (windowBlocks - 1)
	c := blockContext{cur: &w.blocks[k], valid: ^uint64(0), validNext: ^uint64(0)}
	if B > 0 {
		c.prev = &w.blocks[(k-1)&(windowBlocks-1)]
	}
	if B+64 < len(s) {
		c.next = &w.blocks[(k+1)&(windowBlocks-1)]
	} else {
		c.valid >>= 64 - uint(len(s)-B)
		c.validNext = c.valid >> 1
	}
	return c
}

// before returns mask m of the block shifted up one byte, the byte before the block
// in bit 0: bit p says whether byte p-1 is in m.
func (c *blockContext) before(m int) uint64 {
	x := c.cur[m] << 1
	if c.prev != nil {
		x |= c.prev[m] >> 63
	}
	return x
}

// after returns mask m shifted down one byte, the byte after the block in bit 63: bit p
// says whether byte p+1 is in m.
func (c *blockContext) after(m int) uint64 {
	x := c.cur[m] >> 1
	if c.next != nil {
		x |= c.next[m] << 63
	}
	return x
}

// applyContractions gives each contraction that starts a piece (a bit of starts & the
// block's apostrophes) a piece of its own: no start inside it, one after it. contraction
// returns a contraction's length in bytes at an offset of s, or 0. Starts it moves past
// the block go into carry.
func applyContractions(starts, apostrophes uint64, s string, B int, carry *blockCarry, contraction func(s string, i int) int) uint64 {
	n := len(s)
	for C := starts & apostrophes; C != 0; C &= C - 1 {
		p := bits.TrailingZeros64(C)
		k := contraction(s, B+p)
		for j := 1; j <= k; j++ {
			q := p + j
			switch {
			case j < k && q < 64:
				starts &^= 1 << uint(q)
			case j < k:
				carry.suppress |= 1 << uint(q-64)
			case B+q >= n:
			case q < 64:
				starts |= 1 << uint(q)
			default:
				carry.force |= 1 << uint(q-64)
			}
		}
	}
	return starts
}
