package tokenize

import "math/bits"

// splitGPT2 is a hand-made scanner equal to the GPT-2 / HF ByteLevel pre-tokenizer regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// as Oniguruma runs it (ordered alternation, backtracking), with HF's Unicode 16.0 classes.
// At each position:
//  1. ' followed by s, t, re, ve, m, ll or d (lowercase ASCII) is a contraction;
//  2. an optional U+0020 and a maximal run of letters, of numbers, or of "other";
//  3. whitespace: a run reaching the end of the text is one piece; otherwise all of the run
//     but its last character is a piece (if ≥ 2 characters), and the last character either
//     joins the next word (a U+0020, by rule 2) or is a piece of its own.
//
// Blocks of 64 bytes without multi-byte whitespace go through gpt2Block, which finds
// all their piece starts at once from the class masks; the others, a piece at a time
// through gpt2PieceEnd. It is a splitter; see refSplitGPT2 for the literal, slow form
// that tests compare it with.
func splitGPT2(w *classWindow, s string, from int, ends []int) []int {
	n := len(s)
	i := from // a piece starts here
	scalar := false
	for i < n && len(ends) < cap(ends) {
		B := i &^ 63
		if !scalar && cap(ends)-len(ends) > 64 && gpt2BlockOK(w, B) {
			var carry gpt2Carry
			last := i
			for after := i; ; after = -1 {
				ends, last, carry = gpt2Block(w, s, B, after, last, carry, ends)
				if B += 64; B >= n {
					return append(ends, n)
				}
				if cap(ends)-len(ends) <= 64 || !gpt2BlockOK(w, B) {
					break
				}
			}
			// The piece that starts at last ends in a block gpt2Block cannot do: go on
			// a piece at a time from there.
			i, scalar = last, true
			continue
		}
		i, scalar = gpt2PieceEnd(w, s, i), false
		ends = append(ends, i)
	}
	return ends
}

// gpt2PieceEnd returns the end of the piece that starts at i.
func gpt2PieceEnd(w *classWindow, s string, i int) int {
	n := len(s)
	w.ensure(i)
	c := s[i]
	if c == '\'' {
		if k := contractionLen(s, i); k > 0 {
			return i + k
		}
	}
	if c == ' ' && i+1 < n {
		// A space followed by a non-space joins the run that follows it.
		if next := w.class(i + 1); next != classSpace {
			return w.runEnd(i+1, next)
		}
	}
	if cls := w.class(i); cls != classSpace {
		return w.runEnd(i, cls)
	}
	// A whitespace run: whole at the end of the text, else all but its last character
	// (if that leaves any).
	k := w.runEnd(i, classSpace)
	if k < n {
		if last := lastCharStart(s, k); last > i {
			k = last
		}
	}
	return k
}

// gpt2BlockOK reports whether gpt2Block can do the block that starts at B: it has no
// multi-byte whitespace (whose last character's start would take a search back).
func gpt2BlockOK(w *classWindow, B int) bool {
	b := &w.blocks[w.block(B)&(windowBlocks-1)]
	return b[classSpace]&b[blockHigh] == 0
}

// gpt2Carry is what gpt2Block hands to the next block: the piece starts a contraction
// at the end of the block moves (bits of the next block).
type gpt2Carry struct{ force, suppress uint64 }

// gpt2Block appends to ends the piece starts in the 64-byte block at B, after the piece
// start `after` (-1: after B-1, with carry from the previous block), and returns the
// last start so far (last, if it found none) and the carry to the next block.
//
// In bit arithmetic over the block's masks (bit p = byte B+p), the rules of splitGPT2
// are: a piece starts where the class changes (R), and at the last character of a
// whitespace run that a non-space follows (E); where that character is U+0020 (J) the
// next run does not start after it, as it joins that run. A contraction at a piece
// start (rare) makes its own piece, which the loop over C puts in.
func gpt2Block(w *classWindow, s string, B, after, last int, carry gpt2Carry, ends []int) ([]int, int, gpt2Carry) {
	n := len(s)
	k := w.block(B) & (windowBlocks - 1)
	cur := &w.blocks[k]
	L, N, S := cur[classLetter], cur[classNumber], cur[classSpace]
	var pL, pN, pS, pJ uint64 // the byte before the block
	if B > 0 {
		prev := &w.blocks[(k-1)&(windowBlocks-1)]
		pL, pN, pS = prev[classLetter]>>63, prev[classNumber]>>63, prev[classSpace]>>63
		pJ = prev[blockSpaceChar] >> 63 &^ S & 1
	}
	R := (L ^ (L<<1 | pL)) | (N ^ (N<<1 | pN)) | (S ^ (S<<1 | pS))
	if B == 0 {
		R |= 1
	}
	valid, validNext := ^uint64(0), ^uint64(0) // bytes below n; bytes p with p+1 below n
	nS := uint64(0)                            // the space bit of the byte after the block
	if B+64 < n {
		nS = w.blocks[(k+1)&(windowBlocks-1)][classSpace] & 1
	} else {
		valid >>= 64 - uint(n-B)
		validNext = valid >> 1
	}
	E := S &^ (S>>1 | nS<<63) & validNext
	J := E & cur[blockSpaceChar]
	starts := (R | E) &^ (J<<1 | pJ) & valid
	starts = starts&^carry.suppress | carry.force
	carry = gpt2Carry{}
	var at uint64 // the bit of after, when it is in this block
	if after >= B {
		at = 1 << uint(after-B)
		starts = starts&^(at<<1-1) | at
	}
	for C := starts & cur[blockApostrophe]; C != 0; C &= C - 1 {
		p := bits.TrailingZeros64(C)
		kc := contractionLen(s, B+p)
		for j := 1; j <= kc; j++ {
			q := p + j
			switch {
			case j < kc && q < 64:
				starts &^= 1 << uint(q)
			case j < kc:
				carry.suppress |= 1 << uint(q-64)
			case B+q >= n:
			case q < 64:
				starts |= 1 << uint(q)
			default:
				carry.force |= 1 << uint(q-64)
			}
		}
	}
	starts &^= at
	for ; starts != 0; starts &= starts - 1 {
		last = B + bits.TrailingZeros64(starts)
		ends = append(ends, last)
	}
	return ends, last, carry
}

// contractionLen returns the length of the lowercase contraction ('s 't 're 've 'm 'll 'd)
// at s[i] == '\”, or 0.
func contractionLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2] == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2] == 'l' {
			return 3
		}
	}
	return 0
}
