package tokenize

import "math/bits"

// The encoder of long pieces under pair-rank semantics (HF merges lists): a 1 MB run of
// letters or digits is one piece, and the merge loops (bpe.go) spend 25-80 ns a byte on
// it, a cache miss per queued pair. This one walks the piece once, left to right, in
// the manner of the backtracking encoder of GitHub's rust-gems `bpe` crate (its README
// explains the idea; no code of it is used here):
//
//   - BPE's result is the one sequence of tokens that covers the piece and whose every
//     adjacent pair is compatible: BPE run on the bytes of the two tokens alone gives
//     exactly those two tokens (compatible). So the tokens can be found greedily: at
//     each position take the longest token the vocabulary has there (a trie walk), or
//     the next shorter one while the pair it makes with the previous token is not
//     compatible or the position after it is known to lead nowhere; when no token fits,
//     step back one token and mark the position as leading nowhere (it can lead nowhere
//     whatever the previous token: the prefix of a piece has one BPE encoding).
//   - Whether a pair is compatible is decided from the merge that makes each token (its
//     canonical split: the last merge BPE does on the token's own bytes), undoing the
//     later of the two merges at a time, as BPE's merges would have happened backwards,
//     and checking that the pair across the boundary could not have merged first (a
//     lower rank; the same rank and left of the merge undone on the right, as BPE takes
//     the leftmost). A few pair-table lookups; results are kept in a small cache.
//   - Only tokens that BPE builds from their own bytes take part (the others never
//     appear in BPE's output), and it needs what trained vocabularies give: merges in
//     non-decreasing rank order (monotone), each token made by one merge. A tokenizer
//     without them keeps mergeLong (newBacktrack returns nil), and so does a piece with
//     a byte the vocabulary lacks (NeoX has none for 0xC0, 0xC1, 0xF5-0xFF, which valid
//     UTF-8 never holds).
//
// Cost: one trie walk per token (a step per byte of the token found, plus one), a
// compatibility check per token tried, and rarely a step back; no queue, no heap. The
// trie's first level is an array; deeper edges are in one open-addressing table.
// FuzzBacktrackMatchesMerge and TestBacktrack check it against the merge loops.

type backtrack struct {
	rank        []int32  // by id: the rank of the merge that makes it; -1: a byte's token
	left, right []uint32 // by id: the canonical split (tokens made by a merge)
	size        []int32  // by id: length in bytes
	shorter     []int32  // by id: the longest token of the trie that is a proper prefix, or -1
	// The trie of the tokens taking part: root[b] is the node of byte b; edges holds
	// (node<<8 | byte) → child as key<<32 | child (nodes from 1, so no slot is 0 but an
	// empty one); nodeTok[node] is the token that ends there, or -1.
	root      [256]uint32
	edges     []uint64
	edgeShift uint
	nodeTok   []int32
	merges    *pairTable
}

// btCacheSize is the number of slots of the per-goroutine cache of compatible pairs.
const btCacheSize = 1 << 16

// newBacktrack builds the backtracking encoder of t, or returns nil if t's vocabulary
// lacks what it needs (see above).
func newBacktrack(t *Tokenizer) *backtrack {
	if t.mergeSemantics != "pairs" || t.merges == nil || !t.monotone || len(t.vocab) >= 1<<24 {
		return nil
	}
	n := len(t.vocab)
	bt := &backtrack{
		rank: make([]int32, n), left: make([]uint32, n), right: make([]uint32, n),
		size: make([]int32, n), shorter: make([]int32, n), merges: t.merges,
	}
	for id := range bt.rank {
		bt.rank[id] = -2 // not a token of the trie (yet)
		bt.size[id] = int32(len(t.vocab[id]))
	}
	for _, id := range t.byteIDs {
		if id >= 0 {
			bt.rank[id] = -1
		}
	}
	ms := t.merges.all() // by rank
	made := make([]bool, n)
	for _, m := range ms {
		if made[m.id] || bt.rank[m.id] == -1 {
			return nil // made by two merges, or a byte's token made by one
		}
		made[m.id] = true
	}
	// In rank order (monotone: a merge's tokens are made by lower ranks), a token takes
	// part if both halves do and BPE on its bytes ends with them.
	for _, m := range ms {
		if bt.rank[m.left] < -1 || bt.rank[m.right] < -1 || !bt.compatible(m.left, m.right, 0) {
			continue
		}
		bt.rank[m.id], bt.left[m.id], bt.right[m.id] = int32(m.rank), m.left, m.right
	}
	bt.buildTrie(t.vocab)
	return bt
}

// buildTrie builds the trie of the tokens taking part, and shorter.
func (bt *backtrack) buildTrie(vocab []string) {
	type edge struct{ key, child uint32 }
	var edges []edge
	bt.nodeTok = []int32{-1} // node 0: none
	newNode := func() uint32 {
		bt.nodeTok = append(bt.nodeTok, -1)
		return uint32(len(bt.nodeTok) - 1)
	}
	for b := range bt.root {
		bt.root[b] = newNode()
	}
	children := map[uint32]uint32{}
	var ids []int
	for id, r := range bt.rank {
		if r >= -1 {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		tok := vocab[id]
		node := bt.root[tok[0]]
		for i := 1; i < len(tok); i++ {
			key := node<<8 | uint32(tok[i])
			child, ok := children[key]
			if !ok {
				child = newNode()
				children[key] = child
				edges = append(edges, edge{key, child})
			}
			node = child
		}
		bt.nodeTok[node] = int32(id)
	}
	size := 1 << bits.Len(uint(2*len(edges)+1))
	bt.edges = make([]uint64, size)
	bt.edgeShift = uint(64 - bits.Len(uint(size-1)))
	for _, e := range edges {
		i := bt.edgeSlot(e.key)
		for bt.edges[i] != 0 {
			i = (i + 1) & (len(bt.edges) - 1)
		}
		bt.edges[i] = uint64(e.key)<<32 | uint64(e.child)
	}
	for id := range bt.shorter {
		bt.shorter[id] = -1
	}
	for _, id := range ids {
		tok := vocab[id]
		node := bt.root[tok[0]]
		for i := 1; i < len(tok); i++ {
			if tk := bt.nodeTok[node]; tk >= 0 {
				bt.shorter[id] = tk
			}
			node = bt.child(node, tok[i])
		}
	}
}

func (bt *backtrack) edgeSlot(key uint32) int {
	return int(uint64(key) * 0x9E3779B97F4A7C15 >> bt.edgeShift)
}

// child returns the child of node by byte b, or 0.
func (bt *backtrack) child(node uint32, b byte) uint32 {
	key := node<<8 | uint32(b)
	mask := len(bt.edges) - 1
	for i := bt.edgeSlot(key); ; i = (i + 1) & mask {
		s := bt.edges[i]
		if uint32(s>>32) == key {
			return uint32(s)
		}
		if s == 0 {
			return 0
		}
	}
}

// longest returns the longest token of the trie that p[pos:] starts with, -1 if none
// (a byte without a token).
func (bt *backtrack) longest(p string, pos int) int32 {
	node := bt.root[p[pos]]
	best := bt.nodeTok[node]
	for i := pos + 1; i < len(p); i++ {
		if node = bt.child(node, p[i]); node == 0 {
			break
		}
		if tk := bt.nodeTok[node]; tk >= 0 {
			best = tk
		}
	}
	return best
}

// compatible reports whether BPE on the bytes of tokens a and b gives a, b: going back
// through the merges that made them, later first, no pair across the boundary merges
// at a rank below limit (limit 0 skips the check of a, b themselves: a token's split).
func (bt *backtrack) compatible(a, b uint32, limit uint32) bool {
	for {
		if bt.merges.get(a, b) < limit {
			return false
		}
		ra, rb := bt.rank[a], bt.rank[b]
		switch {
		case ra > rb:
			limit, a = uint32(ra), bt.right[a]
		case rb >= 0:
			limit, b = uint32(rb)+1, bt.left[b]
		default:
			return true
		}
	}
}

// btState is the per-goroutine scratch of backtrack.encode.
type btState struct {
	dead  []uint64 // a bit per position of the piece: no encoding of the rest starts there
	cache []uint64 // compatible pairs: a<<40 | b<<16 | 1<<1 | ok, direct-mapped
}

// compatibleCached is compatible(a, b, noRank) through st's cache.
func (bt *backtrack) compatibleCached(st *btState, a, b uint32) bool {
	key := uint64(a)<<40 | uint64(b)<<16 | 2
	i := (uint64(a)*0x9E3779B97F4A7C15 ^ uint64(b)*0xC2B2AE3D27D4EB4F) >> (64 - 16)
	if s := st.cache[i]; s&^1 == key {
		return s&1 != 0
	}
	ok := bt.compatible(a, b, noRank)
	v := key
	if ok {
		v |= 1
	}
	st.cache[i] = v
	return ok
}

// encode appends the BPE encoding of p to out. ok is false if p holds a byte the
// vocabulary lacks, or if the search ran out of tokens, which the vocabulary's checks in
// newBacktrack rule out (the caller then merges p the other way).
func (bt *backtrack) encode(st *btState, p string, out []uint32) (_ []uint32, ok bool) {
	n := len(p)
	if n == 0 {
		return out, true
	}
	words := n/64 + 1
	if cap(st.dead) < words {
		st.dead = make([]uint64, words)
	}
	dead := st.dead[:words]
	clear(dead)
	if st.cache == nil {
		st.cache = make([]uint64, btCacheSize)
	}
	base := len(out)
	pos := 0
	next := bt.longest(p, 0)
	for {
		if next < 0 {
			return out, false
		}
		tok := next
		last := int32(-1)
		if len(out) > base {
			last = int32(out[len(out)-1])
		}
		for {
			end := pos + int(bt.size[tok])
			if dead[end>>6]&(1<<(end&63)) == 0 && (last < 0 || bt.compatibleCached(st, uint32(last), uint32(tok))) {
				out = append(out, uint32(tok))
				pos = end
				if pos == n {
					return out, true
				}
				next = bt.longest(p, pos)
				break
			}
			if tok = bt.shorter[tok]; tok < 0 {
				// Nothing fits at pos after last: step back.
				if last < 0 {
					return out, false
				}
				dead[pos>>6] |= 1 << (pos & 63)
				out = out[:len(out)-1]
				pos -= int(bt.size[last])
				next = last
				break
			}
		}
	}
}

// reachable reports whether id takes part in the backtracking encoder (a byte's token,
// or one BPE builds from its own bytes), for tests.
func (bt *backtrack) reachable(id int) bool { return bt.rank[id] >= -1 }
