package tokenize

import "sync"

// The slow, obvious encoder. It follows HF's order of operations literally and shares no
// code with the fast path beyond the loaded vocabulary: added tokens are found by trying
// every token at every position, pieces come from running the regex (pattern.go), and BPE
// repeatedly merges the leftmost adjacent pair with the lowest rank, comparing strings.
// Tests and fuzz targets check Encode against it.

// refTables are the reference encoder's own lookup tables, built on first use.
type refTables struct {
	pairRank map[[2]string]int // pairs semantics: rank of (left, right) in the merge list
}

var refTablesOnce sync.Map // *Tokenizer -> *refTables

func (t *Tokenizer) refTables() *refTables {
	if v, ok := refTablesOnce.Load(t); ok {
		return v.(*refTables)
	}
	rt := &refTables{pairRank: map[[2]string]int{}}
	for _, m := range t.mergeTable() {
		rt.pairRank[[2]string{t.vocab.at(int(m.left)), t.vocab.at(int(m.right))}] = int(m.rank)
	}
	refTablesOnce.Store(t, rt)
	return rt
}

// refEncode is the reference for Encode (BPE tokenizers only).
func (t *Tokenizer) refEncode(text string) []int {
	text = ReplaceInvalidUTF8(text)
	var out []int
	for _, seg := range refSplitAdded(text, t.added, false, nil) {
		if seg.id >= 0 {
			out = append(out, seg.id)
			continue
		}
		norm := seg.text
		if t.normalizer == "NFC" {
			norm = NFC(norm)
		}
		for _, sub := range refSplitAdded(norm, t.added, true, t.normalize) {
			if sub.id >= 0 {
				out = append(out, sub.id)
				continue
			}
			s := sub.text
			if s == "" {
				continue
			}
			if t.addPrefixSpace && s[0] != ' ' {
				s = " " + s
			}
			ends := refSplitters[t.pattern](s, nil)
			prev := 0
			for _, e := range ends {
				out = append(out, t.refBPE(s[prev:e])...)
				prev = e
			}
		}
	}
	return out
}

type refSegment struct {
	text string
	id   int // -1 for text
}

// refSplitAdded splits s on the added tokens whose Normalized flag equals normalized,
// leftmost-longest, by trying every token at every position; normalize, if set, makes
// the content that a normalized token is matched as.
func refSplitAdded(s string, added []AddedToken, normalized bool, normalize func(string) string) []refSegment {
	var out []refSegment
	last := 0
	for i := 0; i < len(s); {
		best, bestLen := -1, 0
		for k, a := range added {
			c := a.Content
			if normalized && normalize != nil {
				c = normalize(c)
			}
			if a.Normalized == normalized && len(c) <= len(s)-i && s[i:i+len(c)] == c {
				if best < 0 || len(c) > bestLen {
					best, bestLen = k, len(c)
				}
			}
		}
		if best < 0 {
			i++
			continue
		}
		out = append(out, refSegment{s[last:i], -1}, refSegment{s[i : i+bestLen], added[best].ID})
		i += bestLen
		last = i
	}
	return append(out, refSegment{s[last:], -1})
}

// refBPE merges the bytes of one piece: while some adjacent pair can merge, merge the
// leftmost pair of lowest rank.
func (t *Tokenizer) refBPE(piece string) []int {
	rt := t.refTables()
	// tiktoken, and HF with ignore_merges, take a piece found whole in the vocabulary.
	if id, ok := t.tokenID(piece); ok && (t.mergeSemantics == "ranks" || t.ignoreMerges) {
		return []int{int(id)}
	}
	var syms []string
	for i := 0; i < len(piece); i++ {
		if _, ok := t.tokenID(piece[i : i+1]); ok {
			syms = append(syms, piece[i:i+1])
		}
	}
	rank := func(a, b string) (int, bool) {
		if t.mergeSemantics == "ranks" {
			id, ok := t.tokenID(a + b)
			return int(id), ok
		}
		r, ok := rt.pairRank[[2]string{a, b}]
		return r, ok
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank(syms[i], syms[i+1]); ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] += syms[at+1]
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	ids := make([]int, len(syms))
	for i, s := range syms {
		id, _ := t.tokenID(s)
		ids[i] = int(id)
	}
	return ids
}
