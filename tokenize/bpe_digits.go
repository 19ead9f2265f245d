package tokenize

import "slices"

// The encoder of long runs of ASCII digits under pair-rank semantics (GPT-2's and NeoX's
// \p{N}+ makes a run of any length one piece). The backtracking encoder
// (bpe_backtrack.go) spends ~60 ns a byte on random digits: every pair of digits is a
// token and most triples are, so it tries ~4 tokens per token kept and steps back every
// other token or so, each step a branch it cannot predict. This one does not search:
//
//   - The BPE encoding of a piece is the one covering by tokens taking part whose every
//     adjacent pair is compatible (bpe_backtrack.go). So is the encoding of each of its
//     prefixes; and the encoding of a prefix p[:i], less its last token t, is the
//     encoding of p[:i-len(t)]. So last[i], the last token of the encoding of p[:i], is
//     the one token t that p[:i] ends with, takes part, and is compatible with
//     last[i-len(t)] (or starts the piece). One pass computes last[1..n], a few
//     candidates a position (the digit tokens that end there: a walk of a small trie of
//     the tokens read backwards); the encoding is then read backwards from last[n].
//   - Digits have few tokens (994 under GPT-2, 1,202 under NeoX, most of 1-4 digits), so
//     the answers of compatible for every pair fit in a table by the tokens' indexes
//     among them (2 bits a pair, ~250-360 KB, per goroutine, filled as pairs are met).
//
// If no candidate fits at a position (which the encoding's uniqueness rules out) the
// caller falls back to the backtracking encoder. FuzzDigitsMatchReference checks it
// against the reference's BPE.

// digitTokens are the digit-only tokens taking part in the backtracking encoder, with a
// trie of them read from their last byte to their first.
type digitTokens struct {
	ids  []uint32 // by index: the token's id
	lens []uint8  // by index: its length in bytes
	// next[node][d] is the node reached from node by the digit d (0: none; node 0 is
	// the root); tok[node] is the index + 1 of the token spelled backwards by the path
	// to node (0: none).
	next [][10]uint16
	tok  []uint16
	// by2[v] and by3[v]: for the loop's fast path, the token of two or three digits
	// that spell v: its index, with 3 in bits 16-17 (a mask for digitState.known's
	// answer); 0 if there is none.
	by2 [100]uint32
	by3 [1000]uint32
}

// digitRunMin is the length from which a run of digits goes to the digit encoder: below
// it the piece caches hold most runs (years, counts) and the backtracking encoder is
// fast enough.
const digitRunMin = 32

// newDigitTokens builds the digit tokens of t's backtracking encoder bt, or returns nil
// if there are too many for the pair table (or none).
func newDigitTokens(t *Tokenizer, bt *backtrack) *digitTokens {
	dt := &digitTokens{next: make([][10]uint16, 1, 4096), tok: make([]uint16, 1, 4096)}
	for id := range bt.toks {
		if !bt.reachable(id) {
			continue
		}
		tok := t.vocab.at(id)
		if len(tok) == 0 || len(tok) > 255 || !allDigits(tok) {
			continue
		}
		if len(dt.ids) == 1<<12 || len(dt.next) > 1<<16-len(tok) {
			return nil
		}
		node := 0
		for i := len(tok) - 1; i >= 0; i-- {
			d := tok[i] - '0'
			if dt.next[node][d] == 0 {
				dt.next[node][d] = uint16(len(dt.next))
				dt.next = append(dt.next, [10]uint16{})
				dt.tok = append(dt.tok, 0)
			}
			node = int(dt.next[node][d])
		}
		dt.ids = append(dt.ids, uint32(id))
		dt.lens = append(dt.lens, uint8(len(tok)))
		dt.tok[node] = uint16(len(dt.ids))
		switch index := uint32(len(dt.ids)-1) | 3<<16; len(tok) {
		case 2:
			dt.by2[int(tok[0]-'0')*10+int(tok[1]-'0')] = index
		case 3:
			dt.by3[int(tok[0]-'0')*100+int(tok[1]-'0')*10+int(tok[2]-'0')] = index
		}
	}
	for d := range 10 {
		// Every digit must have its token, or no run can be covered.
		if n := dt.next[0][d]; n == 0 || dt.tok[n] == 0 {
			return nil
		}
	}
	return dt
}

// allDigits reports whether s is ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]-'0' > 9 {
			return false
		}
	}
	return true
}

// digitLastKeep is the longest run whose digitState.last a goroutine keeps for the next
// (2 bytes a digit: 8 MB).
const digitLastKeep = 4 << 20

// digitState is the per-goroutine scratch of encodeDigits.
type digitState struct {
	pairs []uint64 // 2 bits by index pair: bit 1 known, bit 0 compatible
	last  []uint16 // last[i]: the index of the last token of the encoding of p[:i]
}

// encodeDigits appends the BPE encoding of p, ASCII digits only, to out. ok is false if
// some position had no token (see above); out is then as it came.
func (bt *backtrack) encodeDigits(st *btState, p string, out []uint32) (_ []uint32, ok bool) {
	dt := bt.digits
	k := uint(len(dt.ids))
	ds := &st.digits
	if ds.pairs == nil {
		ds.pairs = make([]uint64, (k*k*2+63)/64)
	}
	n := len(p)
	last := ds.last
	if cap(last) < n+1 {
		last = make([]uint16, n+1)
		if n < digitLastKeep {
			ds.last = last
		}
	}
	last = last[:n+1]
	for i := 1; i <= n; i++ {
		if i > 3 {
			// The fast path: the last token of the encoding of p[:i] is nearly always
			// of two digits (~57% of positions in random digits) or three (~40%).
			// Both answers are looked up and the one compatible chosen without a
			// branch on which (the choice is a coin toss to a branch predictor).
			// Where the three digits are no token (~23% of positions under GPT-2)
			// the other answer stands alone, again without a branch: the missing
			// token's entry (0) reads index 0's answer and masks it off.
			v2 := int(p[i-2]-'0')*10 + int(p[i-1]-'0')
			t2, t3 := dt.by2[v2], dt.by3[int(p[i-3]-'0')*100+v2]
			c2 := ds.known(k, last[i-2], uint16(t2)) & uint64(t2>>16)
			c3 := ds.known(k, last[i-3], uint16(t3)) & uint64(t3>>16)
			t := t3
			if c2&1 != 0 {
				t = t2
			}
			if (c2|c3)&1 != 0 {
				last[i] = uint16(t)
				continue
			}
		}
		// Every candidate, shortest first, and answers not yet known.
		node := 0
		found := false
		for j := i - 1; j >= 0; j-- {
			node = int(dt.next[node][p[j]-'0'])
			if node == 0 {
				break
			}
			t := dt.tok[node]
			if t == 0 {
				continue
			}
			t--
			if j == 0 || bt.digitsCompatible(ds, k, last[j], t) {
				last[i] = t
				found = true
				break
			}
		}
		if !found {
			return out, false
		}
	}
	start := len(out)
	for i := n; i > 0; i -= int(dt.lens[last[i]]) {
		out = append(out, dt.ids[last[i]])
	}
	slices.Reverse(out[start:])
	return out, true
}

// known returns the answer kept for the digit tokens of indexes a and b: 3 compatible, 2
// not, 0 not yet known.
func (ds *digitState) known(k uint, a, b uint16) uint64 {
	i := uint(a)*k + uint(b)
	return ds.pairs[i>>5] >> (i & 31 * 2) & 3
}

// digitsCompatible is compatible(a, b, noRank) for the digit tokens of indexes a and b,
// through ds's table of answers.
func (bt *backtrack) digitsCompatible(ds *digitState, k uint, a, b uint16) bool {
	i := uint(a)*k + uint(b)
	w, sh := &ds.pairs[i>>5], i&31*2
	if v := *w >> sh & 3; v != 0 {
		return v == 3
	}
	ok := bt.compatible(bt.digits.ids[a], bt.digits.ids[b], noRank)
	v := uint64(2)
	if ok {
		v = 3
	}
	*w |= v << sh
	return ok
}
