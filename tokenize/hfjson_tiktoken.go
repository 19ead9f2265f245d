package tokenize

import (
	"encoding/json"
	"fmt"
)

// tiktoken encodings (cl100k_base, o200k_base) as a Hugging Face tokenizer.json, and
// back.
//
// tiktoken merges, in a piece, the adjacent pair whose concatenation has the lowest
// rank; HF's BPE the pair that comes first in a merges list. The merges list derived
// from the ranks (for each token, in rank order, the two parts that BPE by ranks,
// allowed only lower ranks, makes of its bytes: the last merge that builds it), with
// ignore_merges (a piece that is a token is that token, as tiktoken looks a piece up
// whole first), gives tiktoken's ids: the conversion transformers' TikTokenConverter
// makes, with the pattern as a Split pre-tokenizer before a ByteLevel one that only maps
// bytes. TestWriteHFJSONHFParity checks HF `tokenizers` against the encoding on the
// golden texts.
//
// LoadHFJSON recognizes such a file (the Split pattern one of hfSplitPatterns,
// ignore_merges, the merges those the vocabulary's ranks give) and loads it as the
// encoding it is, by rank: the same ids and the same fingerprint, so that a dataset
// tokenized with cl100k_base accepts the tokenizer.json `train export` wrote beside its
// model. Any other Split is refused as before.

// hfSplitPatterns are the tiktoken patterns as HF's Split pre-tokenizer writes them
// (as in the HF conversions of cl100k_base and o200k_base).
var hfSplitPatterns = map[string]string{
	"cl100k_base": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"o200k_base": `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

// hfSplitPre is the pre-tokenizer of an encoding with pattern name: the pattern's
// matches isolated, then their bytes mapped by ByteLevel (its own regex off).
func hfSplitPre(name string) string {
	re, _ := json.Marshal(hfSplitPatterns[name])
	return `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": ` + string(re) +
		`}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}`
}

// ranksMerges derives the merges list of a vocabulary merged by rank: byRank holds the
// tokens' bytes by rank ("" for a rank no token has) and rank looks one up. For each
// token of two bytes or more, in rank order, BPE by ranks runs on its bytes allowed only
// lower ranks and must end in two parts, each ranked below the token: they are its
// merge. That holds for every token of cl100k_base and o200k_base, and it is what makes
// the merges list, with ignore_merges, give the ranks' ids; a vocabulary where a token
// ends in more parts (BPE by ranks could build it only from a part ranked above it, in
// a longer piece) or from a part ranked above it has no such list: an error naming the
// token.
func ranksMerges(byRank []string, rank func(string) (int, bool)) ([][2]string, error) {
	var merges [][2]string
	var parts []string
	for r, tok := range byRank {
		if len(tok) < 2 {
			continue
		}
		parts = parts[:0]
		for i := range len(tok) {
			parts = append(parts, tok[i:i+1])
		}
		for len(parts) > 2 {
			best, bestRank := -1, r
			for i := 0; i+1 < len(parts); i++ {
				if pr, ok := rank(parts[i] + parts[i+1]); ok && pr < bestRank {
					best, bestRank = i, pr
				}
			}
			if best < 0 {
				break
			}
			parts[best] += parts[best+1]
			parts = append(parts[:best+1], parts[best+2:]...)
		}
		ok := len(parts) == 2
		for _, p := range parts {
			if pr, found := rank(p); !found || pr >= r {
				ok = false
			}
		}
		if !ok {
			return nil, fmt.Errorf("token %q (rank %d) is not built by merges of lower-ranked tokens: no merges list gives these ranks' ids", byteLevelEncode(tok), r)
		}
		merges = append(merges, [2]string{parts[0], parts[1]})
	}
	return merges, nil
}

// tiktokenMerges is t's merges list derived from its ranks (t merges by rank).
func (t *Tokenizer) tiktokenMerges() ([][2]string, error) {
	byRank := make([]string, t.vocab.len())
	for id := range byRank {
		s := t.vocab.at(id)
		if got, ok := t.tokenID(s); ok && int(got) == id {
			byRank[id] = s // not an added token's content
		}
	}
	return ranksMerges(byRank, func(s string) (int, bool) {
		id, ok := t.tokenID(s)
		return int(id), ok
	})
}

// asTiktoken turns d, a tokenizer.json with a Split pre-tokenizer of pattern d.pattern,
// into the tiktoken encoding it converts (merges by rank, none listed; the added tokens'
// contents out of the vocabulary), or fails naming what differs from such a conversion.
func (d *bpeDefinition) asTiktoken(added map[string]bool) error {
	if !d.ignoreMerges {
		return fmt.Errorf("a Split pre-tokenizer with %s's pattern is supported as the conversion of that tiktoken encoding, which sets model.ignore_merges", d.pattern)
	}
	// The added tokens are in the vocabulary too, at their ids (hfVocabKeyWithAdded);
	// the encoding has them as added tokens only. Not one that the merges make (or a
	// byte's token): that is a token of the encoding's ranks as well, which a file's
	// added_tokens may list again (HF matches it as an added token first, and BPE
	// still makes its id elsewhere; so does the tokenizer built here).
	made := make(map[string]bool, len(d.merges))
	for _, m := range d.merges {
		made[m[0]+m[1]] = true
	}
	for content := range added {
		if len(content) > 1 && !made[content] {
			delete(d.vocab, content)
		}
	}
	n := 0
	for tok, id := range d.vocab {
		if id < 0 || id > 4*len(d.vocab)+1024 {
			return fmt.Errorf("vocabulary id %d of %q for %d tokens: not the ranks of a tiktoken encoding", id, byteLevelEncode(tok), len(d.vocab))
		}
		n = max(n, id+1)
	}
	byRank := make([]string, n)
	for tok, id := range d.vocab {
		if byRank[id] != "" {
			return fmt.Errorf("vocabulary id %d is given to %q and %q", id, byteLevelEncode(byRank[id]), byteLevelEncode(tok))
		}
		byRank[id] = tok
	}
	want, err := ranksMerges(byRank, func(s string) (int, bool) {
		id, ok := d.vocab[s]
		return id, ok
	})
	if err != nil {
		return err
	}
	if len(d.merges) != len(want) {
		return fmt.Errorf("%d merges, where the conversion of a tiktoken encoding with this vocabulary has %d: a Split pre-tokenizer is supported only for such a conversion", len(d.merges), len(want))
	}
	for i := range want {
		if d.merges[i] != want[i] {
			return fmt.Errorf("merge %d (%q %q) is not the one the ranks give (%q %q): a Split pre-tokenizer is supported only for the conversion of a tiktoken encoding", i+1, byteLevelEncode(d.merges[i][0]), byteLevelEncode(d.merges[i][1]), byteLevelEncode(want[i][0]), byteLevelEncode(want[i][1]))
		}
	}
	d.ranksSemantics, d.ignoreMerges, d.merges = true, false, nil
	return nil
}
