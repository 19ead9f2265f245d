package tokenize

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

// The compiled form of a byte-level BPE tokenizer: what building it from its files
// computes (the vocabulary as raw bytes, the merges as id triples, which tokens the
// merges cannot rebuild, whether merges come in rank order, the fingerprint), written so
// that loading it is a few copies and two table builds, not a parse and an analysis.
// The named tokenizers compiled into the binaries use it (package tokenize/embedded,
// built by go generate from the publishers' files and checked against them by tests);
// it is not an interchange format: a gptkit of another version may refuse it.
//
//	magic        "gptkit-tokenizer-compiled-v1\n"
//	header       uint32 length, then JSON (compiledHeader)
//	tokens       uint32 × (Tokens+1): offsets of each id's bytes in blob ("" for ids
//	             that are not vocabulary tokens: added tokens come in the header)
//	merges       uint32 × 4 × Merges: left, right, rank, id, by rank (pair-rank
//	             semantics; tiktoken's has none: a merge's rank is that of its bytes)
//	wholeBad     uint32 × WholeBad: ids the merges do not rebuild
//	blob         the tokens' bytes
//
// Numbers are little-endian; the uint32 sections start 4-aligned, so that on
// little-endian machines they are used where they lie.

const compiledMagic = "gptkit-tokenizer-compiled-v1\n"

type compiledHeader struct {
	Name           string       `json:"name"`
	Pattern        string       `json:"pattern"`
	AddPrefixSpace bool         `json:"add_prefix_space,omitempty"`
	Normalizer     string       `json:"normalizer,omitempty"`
	MergeSemantics string       `json:"merge_semantics"`
	IgnoreMerges   bool         `json:"ignore_merges,omitempty"`
	Monotone       bool         `json:"monotone,omitempty"`
	MaxRank        uint32       `json:"max_rank"`
	VocabSize      int          `json:"vocab_size"`
	EOD            int          `json:"eod"`
	Fingerprint    string       `json:"fingerprint"`
	Added          []AddedToken `json:"added,omitempty"`
	Tokens         int          `json:"tokens"`
	Merges         int          `json:"merges"`
	WholeBad       int          `json:"whole_bad,omitempty"`
	// HighRebuilt: the merges rebuild every token of two bytes or more with a byte of
	// 0x80 or more from its own bytes (tiktoken's semantics; safesplit.go), checked
	// when compiled.
	HighRebuilt bool `json:"high_rebuilt,omitempty"`
	Blob        int  `json:"blob"`
}

// MarshalCompiled returns the compiled form of t (a byte-level BPE tokenizer), which
// LoadCompiled loads. The same tokenizer always gives the same bytes.
func (t *Tokenizer) MarshalCompiled() ([]byte, error) {
	if t.kind != KindBPE {
		return nil, fmt.Errorf("tokenize: %s: only byte-level BPE tokenizers have a compiled form", t.name)
	}
	h := compiledHeader{
		Name: t.name, Pattern: t.pattern, AddPrefixSpace: t.addPrefixSpace, Normalizer: t.normalizer,
		MergeSemantics: t.mergeSemantics, IgnoreMerges: t.ignoreMerges, Monotone: t.monotone, MaxRank: t.maxRank,
		VocabSize: t.vocabSize, EOD: t.eod, Fingerprint: t.fingerprint, Added: t.added, Tokens: t.vocab.len(),
		HighRebuilt: t.mergeSemantics == "ranks" && (t.highRebuilt || t.mergesRebuildHighTokens(0)),
	}
	// The vocabulary without the added tokens' contents.
	addedAt := make(map[int]bool, len(t.added))
	for _, a := range t.added {
		if _, ok := t.tokenID(a.Content); !ok {
			addedAt[a.ID] = true
		}
	}
	var blob []byte
	offsets := make([]uint32, 0, t.vocab.len()+1)
	for id := range t.vocab.len() {
		tok := t.vocab.at(id)
		offsets = append(offsets, uint32(len(blob)))
		if !addedAt[id] {
			blob = append(blob, tok...)
		}
	}
	offsets = append(offsets, uint32(len(blob)))
	var merges []uint32
	if t.merges != nil {
		for _, m := range t.merges.all() {
			merges = append(merges, m.left, m.right, m.rank, m.id)
		}
	}
	var wholeBad []uint32
	for id, bad := range t.wholeBad {
		if bad {
			wholeBad = append(wholeBad, uint32(id))
		}
	}
	h.Merges, h.WholeBad, h.Blob = len(merges)/4, len(wholeBad), len(blob)
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(compiledMagic)
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(head))))
	b.Write(head)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	for _, section := range [][]uint32{offsets, merges, wholeBad} {
		for _, v := range section {
			b.Write(binary.LittleEndian.AppendUint32(nil, v))
		}
	}
	b.Write(blob)
	return b.Bytes(), nil
}

// LoadCompiled loads a tokenizer from its compiled form (MarshalCompiled). name, when
// not empty, replaces the name it was compiled with (gpt2 and r50k_base share one).
// The tokenizer keeps references into data, which must not change afterwards.
func LoadCompiled(data []byte, name string) (*Tokenizer, error) {
	t, err := loadCompiled(data, name)
	if err != nil {
		return nil, fmt.Errorf("tokenize: compiled tokenizer: %w", err)
	}
	return t, nil
}

func loadCompiled(data []byte, name string) (*Tokenizer, error) {
	if !bytes.HasPrefix(data, []byte(compiledMagic)) {
		return nil, errors.New("not a compiled tokenizer of this version (bad magic)")
	}
	rest := data[len(compiledMagic):]
	if len(rest) < 4 {
		return nil, errors.New("truncated header")
	}
	n := int(binary.LittleEndian.Uint32(rest))
	if n > len(rest)-4 {
		return nil, errors.New("truncated header")
	}
	var h compiledHeader
	if err := json.Unmarshal(rest[4:4+n], &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	pos := len(compiledMagic) + 4 + n
	pos += (4 - pos%4) % 4
	if h.Tokens < 0 || h.Merges < 0 || h.WholeBad < 0 || h.Blob < 0 || h.Tokens >= pairLimit || h.Merges >= 1<<26 || h.WholeBad > h.Tokens {
		return nil, errors.New("bad section sizes")
	}
	if h.MergeSemantics == "ranks" && h.Merges != 0 {
		return nil, errors.New("merges under tiktoken's semantics")
	}
	words := (h.Tokens + 1) + 4*h.Merges + h.WholeBad
	if pos > len(data) || words > (len(data)-pos)/4 || h.Blob != len(data)-pos-4*words {
		return nil, fmt.Errorf("%d bytes, want %d", len(data), pos+4*words+h.Blob)
	}
	u32 := uint32s(data[pos:], words)
	offsets, merges, wholeBad := u32[:h.Tokens+1], u32[h.Tokens+1:h.Tokens+1+4*h.Merges], u32[h.Tokens+1+4*h.Merges:]
	blob := unsafe.String(unsafe.SliceData(data[pos+4*words:]), h.Blob)

	if name == "" {
		name = h.Name
	}
	t := &Tokenizer{
		name: name, kind: KindBPE, pattern: h.Pattern, addPrefixSpace: h.AddPrefixSpace, normalizer: h.Normalizer,
		mergeSemantics: h.MergeSemantics, ignoreMerges: h.IgnoreMerges, monotone: h.Monotone, maxRank: h.MaxRank,
		vocabSize: h.VocabSize, eod: h.EOD, fingerprint: h.Fingerprint, highRebuilt: h.HighRebuilt,
	}
	if err := t.setFunctions(); err != nil {
		return nil, err
	}
	if h.MergeSemantics != "pairs" && h.MergeSemantics != "ranks" {
		return nil, fmt.Errorf("unknown merge semantics %q", h.MergeSemantics)
	}
	if h.VocabSize < h.Tokens || h.VocabSize > pairLimit || h.EOD < -1 || h.EOD >= h.VocabSize {
		return nil, errors.New("bad vocabulary size or end-of-document id")
	}
	for id := range h.Tokens {
		if a, b := offsets[id], offsets[id+1]; a > b || int(b) > len(blob) {
			return nil, fmt.Errorf("token %d: bad offsets", id)
		}
	}
	t.vocab = tokenStrings{blob: blob, offs: offsets, n: h.VocabSize}
	// Ids and ranks are checked (nothing out of range reaches a table); that the merges
	// are the ones the fingerprint stands for is the compiler's promise, which the
	// tests of the embedded tokenizers check.
	ms := make([]pairMerge, h.Merges)
	for i := range ms {
		m := pairMerge{merges[4*i], merges[4*i+1], merges[4*i+2], merges[4*i+3]}
		if int(m.left) >= h.Tokens || int(m.right) >= h.Tokens || int(m.id) >= h.Tokens || m.rank > h.MaxRank || m.rank >= pairLimit {
			return nil, fmt.Errorf("merge %d: id or rank out of range", i)
		}
		ms[i] = m
	}
	t.index(ms)
	if t.mergeSemantics == "ranks" {
		for b := range 256 {
			if t.byteIDs[b] < 0 {
				return nil, fmt.Errorf("no token for byte 0x%02x", b)
			}
		}
	}
	if h.WholeBad > 0 {
		t.wholeBad = make([]bool, t.vocab.len())
		for _, id := range wholeBad {
			if int(id) >= t.vocab.len() {
				return nil, errors.New("bad id in whole_bad")
			}
			t.wholeBad[id] = true
		}
	}
	for _, a := range h.Added {
		if a.ID < 0 || a.ID >= h.VocabSize {
			return nil, fmt.Errorf("added token %q: id %d out of range", a.Content, a.ID)
		}
	}
	if err := t.setAdded(h.Added); err != nil {
		return nil, err
	}
	return t, nil
}

// uint32s returns the first n little-endian uint32s of b: b itself on little-endian
// machines when it is aligned, a decoded copy otherwise.
func uint32s(b []byte, n int) []uint32 {
	if n == 0 {
		return nil
	}
	if isLittleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

var isLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
