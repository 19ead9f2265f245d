package tokenize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// bpeDefinition is everything that decides a byte-level BPE tokenizer's ids. Loaders fill
// it from their file format; build turns it into a Tokenizer.
type bpeDefinition struct {
	name           string
	vocab          map[string]int // raw bytes -> id (BPE tokens, not added tokens)
	merges         [][2]string    // raw bytes of (left, right), in rank order; nil for ranks
	ranksSemantics bool           // tiktoken: a pair's rank is the rank of its concatenation
	ignoreMerges   bool           // HF ignore_merges: a piece found whole in the vocabulary is that token
	pattern        string         // pre-tokenizer: "gpt2", "cl100k_base", "o200k_base"
	addPrefixSpace bool
	normalizer     string // "" or "NFC"
	added          []AddedToken
}

// splitters maps a pattern name to its pre-tokenizer; refSplitters to the pattern run
// literally (pattern.go), which the reference encoder uses.
var (
	splitters    = map[string]splitter{"gpt2": splitGPT2}
	refSplitters = map[string]func(s string, ends []int) []int{"gpt2": refSplitGPT2}
)

func (d *bpeDefinition) build() (*Tokenizer, error) {
	t := &Tokenizer{
		name:           d.name,
		kind:           KindBPE,
		pattern:        d.pattern,
		addPrefixSpace: d.addPrefixSpace,
		normalizer:     d.normalizer,
		ignoreMerges:   d.ignoreMerges,
		eod:            -1,
	}
	if err := t.setFunctions(); err != nil {
		return nil, err
	}
	if len(d.merges) >= pairLimit {
		return nil, fmt.Errorf("tokenize: %s: %d merges; at most %d are supported", d.name, len(d.merges), pairLimit-1)
	}
	size := 0
	for tok, id := range d.vocab {
		if id < 0 || id >= pairLimit {
			return nil, fmt.Errorf("tokenize: %s: token %q has id %d out of range", d.name, tok, id)
		}
		size = max(size, id+1)
	}
	for _, a := range d.added {
		if a.ID < 0 || a.ID >= pairLimit {
			return nil, fmt.Errorf("tokenize: %s: added token %q has id %d out of range (0 to %d)", d.name, a.Content, a.ID, pairLimit-1)
		}
		size = max(size, a.ID+1)
	}
	vocab := make([]string, size)
	for tok, id := range d.vocab {
		if vocab[id] != "" {
			return nil, fmt.Errorf("tokenize: %s: id %d is used by both %q and %q", d.name, id, vocab[id], tok)
		}
		if tok == "" {
			return nil, fmt.Errorf("tokenize: %s: id %d is an empty token", d.name, id)
		}
		vocab[id] = tok
	}
	t.vocab = packTokens(vocab)
	var merges []pairMerge
	if d.ranksSemantics {
		// A pair merges when its bytes together are a token, at that token's rank
		// (its id): looked up by the bytes (rankOf), so every byte must be a token.
		t.mergeSemantics = "ranks"
		for b := range 256 {
			if _, ok := d.vocab[string([]byte{byte(b)})]; !ok {
				return nil, fmt.Errorf("tokenize: %s: the rank file lacks the token of byte 0x%02x", d.name, b)
			}
		}
	} else {
		t.mergeSemantics = "pairs"
		// A merge the list repeats has the rank of its last occurrence: HF collects the
		// list into a map, whose later entries replace earlier ones (BpeBuilder::build).
		last := make(map[uint64]int, len(d.merges))
		for rank, m := range d.merges {
			l, okl := d.vocab[m[0]]
			r, okr := d.vocab[m[1]]
			if _, okm := d.vocab[m[0]+m[1]]; !okl || !okr || !okm {
				return nil, fmt.Errorf("tokenize: %s: merge %d (%q %q) uses a token missing from the vocabulary", d.name, rank+1, byteLevelEncode(m[0]), byteLevelEncode(m[1]))
			}
			last[mergePairKey(uint32(l), uint32(r))] = rank
		}
		for rank, m := range d.merges {
			l, r, id := d.vocab[m[0]], d.vocab[m[1]], d.vocab[m[0]+m[1]]
			if last[mergePairKey(uint32(l), uint32(r))] != rank {
				continue // repeated later
			}
			merges = append(merges, pairMerge{uint32(l), uint32(r), uint32(rank), uint32(id)})
		}
	}
	t.index(merges)
	if t.merges != nil {
		t.monotone, t.maxRank = t.checkMonotone()
	}
	if !d.ranksSemantics && !d.ignoreMerges {
		t.wholeBad = t.findUnreachableTokens()
	}
	if err := t.setAdded(d.added); err != nil {
		return nil, err
	}
	t.vocabSize = size
	t.eod = findEOD(t)
	t.fingerprint = t.computeFingerprint()
	return t, nil
}

// setFunctions sets the pre-tokenizer and the normalizer the names in t ask for.
func (t *Tokenizer) setFunctions() error {
	var ok bool
	if t.split, ok = splitters[t.pattern]; !ok {
		return fmt.Errorf("tokenize: %s: pre-tokenizer pattern %q is not supported", t.name, t.pattern)
	}
	t.blockSplit = t.pattern == "gpt2" || t.pattern == "cl100k_base"
	switch t.normalizer {
	case "":
	case "NFC":
		t.normalize = NFC
	default:
		return fmt.Errorf("tokenize: %s: normalizer %q is not supported (none and NFC are)", t.name, t.normalizer)
	}
	return nil
}

// index builds the lookup structures of t's vocabulary (its BPE tokens: t.vocab before
// setAdded) and of merges.
func (t *Tokenizer) index(merges []pairMerge) {
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	for id := range t.vocab.len() {
		tok := t.vocab.at(id)
		if len(tok) == 1 {
			t.byteIDs[tok[0]] = int32(id)
		}
		t.maxTokenByteLen = max(t.maxTokenByteLen, len(tok))
	}
	t.whole, t.longIDs = newVocabTable(&t.vocab)
	if t.mergeSemantics == "pairs" {
		t.merges = newPairTable(merges, true)
	}
}

// setAdded adds the added tokens (sorted by id) to t: their contents into t.vocab, for
// Decode, and the matchers that find them in text.
func (t *Tokenizer) setAdded(tokens []AddedToken) error {
	added := append([]AddedToken(nil), tokens...)
	sort.Slice(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	var raw, norm []AddedToken
	// Without a normalizer the flag changes nothing when all tokens have the same; when
	// they differ, the tokens with normalized=false are still found first, and the
	// others only in the text between them, as HF does (extract_and_normalize).
	mixed := false
	for _, a := range added {
		mixed = mixed || a.Normalized != added[0].Normalized
	}
	for i, a := range added {
		if a.Content == "" {
			return fmt.Errorf("tokenize: %s: added token %d is empty", t.name, a.ID)
		}
		if t.normalizer == "" && !mixed {
			added[i].Normalized = false
			a.Normalized = false
		}
		if v := t.vocab.at(a.ID); v != "" && v != a.Content {
			return fmt.Errorf("tokenize: %s: added token %q has id %d, which the vocabulary gives to %q", t.name, a.Content, a.ID, byteLevelEncode(v))
		}
		t.vocab.set(a.ID, a.Content)
		if a.Normalized {
			if t.normalize != nil {
				// Matched in normalized text as normalized itself (HF keeps the
				// normalized form of such a token's content to match).
				a.Content = t.normalize(a.Content)
			}
			norm = append(norm, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.added = added
	t.cuttable = !t.addPrefixSpace
	t.crCuttable = t.cuttable
	for _, a := range added {
		if strings.Contains(a.Content, "\n") {
			t.cuttable = false
		}
		if strings.Contains(a.Content, "\r") {
			t.crCuttable = false
		}
	}
	t.rawAdded = newAddedMatcher(raw)
	t.normAdded = newAddedMatcher(norm)
	return nil
}

// tokenID returns the id of the vocabulary token (not an added token) whose bytes are
// s.
func (t *Tokenizer) tokenID(s string) (uint32, bool) {
	if n := len(s); n > 0 && n <= 16 && keyable(s) {
		lo, hi := pieceKey(s, 0, n)
		v := t.whole.find(lo, hi, n)
		return uint32(v & idMask), v != 0
	}
	id, ok := t.longIDs[s]
	return id, ok
}

// mergeTable returns the merges of the pair table by rank (none under tiktoken's
// semantics, which has no pair table).
func (t *Tokenizer) mergeTable() []pairMerge {
	if t.merges == nil {
		return nil
	}
	return t.merges.all()
}

// mergeList returns the merges in rank order as (left, right) under pair-rank semantics
// (the merges list of the files), nil under tiktoken's.
func (t *Tokenizer) mergeList() [][2]uint32 {
	if t.mergeSemantics != "pairs" {
		return nil
	}
	ms := t.mergeTable()
	out := make([][2]uint32, len(ms))
	for i, m := range ms {
		out[i] = [2]uint32{m.left, m.right}
	}
	return out
}

// findEOD picks the end-of-document token as GPT-NeoX and Megatron do: <|endoftext|>,
// else </s>, else -1.
func findEOD(t *Tokenizer) int {
	for _, name := range []string{"<|endoftext|>", "</s>"} {
		if id, ok := t.ID(name); ok {
			return id
		}
	}
	return -1
}

// computeFingerprint hashes a canonical JSON form of everything that decides the ids:
// the same tokenizer loaded from tokenizer.json or from vocab.json + merges.txt gets the
// same fingerprint.
func (t *Tokenizer) computeFingerprint() string {
	type canonAdded struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		Normalized bool   `json:"normalized"`
	}
	c := struct {
		Format         string       `json:"format"`
		Kind           Kind         `json:"kind"`
		Pattern        string       `json:"pattern,omitempty"`
		AddPrefixSpace bool         `json:"add_prefix_space,omitempty"`
		Normalizer     string       `json:"normalizer,omitempty"`
		Merges         string       `json:"merges,omitempty"`
		IgnoreMerges   bool         `json:"ignore_merges,omitempty"` // decides ids: a piece found whole is that token
		Vocab          []string     `json:"vocab"`                   // hex bytes by id
		MergeList      [][2]uint32  `json:"merge_list,omitempty"`
		Added          []canonAdded `json:"added,omitempty"`
		VocabSize      int          `json:"vocab_size"`
		EOD            int          `json:"eod"`
	}{Format: "gptkit-tokenizer-v1", Kind: t.kind, Pattern: t.pattern, AddPrefixSpace: t.addPrefixSpace,
		Normalizer: t.normalizer, Merges: t.mergeSemantics, IgnoreMerges: t.ignoreMerges, MergeList: t.mergeList(),
		VocabSize: t.vocabSize, EOD: t.eod}
	switch t.kind {
	case KindBPE:
		c.Vocab = make([]string, t.vocab.len())
		for i := range c.Vocab {
			c.Vocab[i] = hex.EncodeToString([]byte(t.vocab.at(i)))
		}
	case KindChar:
		for _, r := range t.chars {
			c.Vocab = append(c.Vocab, hex.EncodeToString([]byte(string(r))))
		}
	}
	for _, a := range t.added {
		c.Added = append(c.Added, canonAdded(a))
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkMonotone reports whether every merge's result can only take part in merges of a
// higher rank: then BPE merges happen in non-decreasing rank order, which mergeLong's
// bucket queue relies on. It holds for trained vocabularies (GPT-2, NeoX, tiktoken's);
// a hand-edited file that breaks it gets the heap merge loop instead.
func (t *Tokenizer) checkMonotone() (bool, uint32) {
	// madeAt[id] = rank of the merge that makes id (-1 for tokens no merge makes).
	madeAt := make([]int64, t.vocab.len())
	for i := range madeAt {
		madeAt[i] = -1
	}
	var maxRank uint32
	t.merges.each(func(_, _, rank, id uint32) {
		maxRank = max(maxRank, rank)
		if madeAt[id] < 0 || int64(rank) < madeAt[id] {
			madeAt[id] = int64(rank)
		}
	})
	monotone := true
	t.merges.each(func(l, r, rank, _ uint32) {
		if madeAt[l] >= int64(rank) || madeAt[r] >= int64(rank) {
			monotone = false
		}
	})
	return monotone, maxRank
}

// findUnreachableTokens marks the vocabulary tokens that BPE does not rebuild from their
// own bytes (nil if there are none, as in every trained vocabulary). Encode may take a
// piece found whole in the vocabulary as one token only when BPE would give that too.
func (t *Tokenizer) findUnreachableTokens() []bool {
	bad := make([]bool, t.vocab.len())
	var any atomic.Bool
	workers := min(runtime.GOMAXPROCS(0), 8)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := t.getState()
			defer t.putState(st)
			for id := w; id < t.vocab.len(); id += workers {
				tok := t.vocab.at(id)
				if len(tok) < 2 {
					continue // a byte or an unused id (added tokens are not in t.vocab yet)
				}
				var parts []uint32
				if len(tok) > heapThreshold {
					parts = t.mergeLongHeap(st, tok)
				} else {
					parts = t.mergeShort(st, tok)
				}
				if len(parts) != 1 || parts[0] != uint32(id) {
					bad[id] = true
					any.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if !any.Load() {
		return nil
	}
	return bad
}
