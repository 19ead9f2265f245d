package tokenize

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
	return splitBlocks(&gpt2Rules, w, s, from, ends)
}

var gpt2Rules = blockRules{ok: gpt2BlockOK, block: gpt2Block, pieceEnd: gpt2PieceEnd}

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

// gpt2Block finds the piece starts of the block at B (see blockRules). In bit arithmetic
// over the block's masks (bit p = byte B+p), the rules of splitGPT2 are: a piece starts
// where the class changes (R), and at the last character of a whitespace run that a
// non-space follows (E); where that character is U+0020 (J) the next run does not start
// after it, as it joins that run. A contraction at a piece start (rare) makes its own
// piece, which applyContractions puts in.
func gpt2Block(w *classWindow, s string, B, after int, carry blockCarry) (uint64, blockCarry) {
	c := newBlockContext(w, s, B)
	L, N, S := c.cur[classLetter], c.cur[classNumber], c.cur[classSpace]
	R := (L ^ c.before(classLetter)) | (N ^ c.before(classNumber)) | (S ^ c.before(classSpace))
	if B == 0 {
		R |= 1
	}
	E := S &^ c.after(classSpace) & c.validNext
	J := E & c.cur[blockSpaceChar]
	var pJ uint64 // the byte before the block is a U+0020 that joins byte 0
	if c.prev != nil {
		pJ = c.prev[blockSpaceChar] >> 63 &^ S & 1
	}
	starts := (R|E)&^(J<<1|pJ)&^carry.suppress | carry.force
	next := blockCarry{notNext: c.next != nil && c.next[classSpace]&c.next[blockHigh] != 0}
	var at uint64 // the bit of after, when it is in this block
	if after >= B {
		at = 1 << uint(after-B)
		starts |= at
	}
	if starts&c.cur[blockApostrophe] != 0 {
		starts = applyContractions(starts, c.cur[blockApostrophe], s, B, &next, contractionLen)
	}
	return starts, next
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
