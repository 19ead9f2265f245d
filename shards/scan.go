package shards

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// A token id at or above the vocabulary's size (or a negative one) makes the trainer's
// embedding lookup fail mid-run; `shards verify` and the loader (VerifyOnOpen) look at
// every id of a shard once, in the same pass that hashes it.

// idRange is the smallest and largest token id of a .bin (0, -1 for an empty one).
type idRange struct {
	Min int64 `json:"min_id"`
	Max int64 `json:"max_id"`
}

// within reports whether every id lies in [0, vocab).
func (r idRange) within(vocab int) bool { return r.Max < r.Min || (r.Min >= 0 && r.Max < int64(vocab)) }

// binScan hashes a .bin of dtype and finds its id range, in one pass over r, and, given
// a vocabulary size, the first id outside it.
type binScan struct {
	dtype DType
	h     hashWriter
	ids   idRange
	n     int64  // bytes seen
	carry []byte // the start of a token split across reads

	vocab    int   // 0: no check
	badAt    int64 // index of the first token outside [0, vocab); -1: none
	badID    int64
	tokensIn int64 // whole tokens seen
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func newBinScan(dtype DType, vocab int) *binScan {
	return &binScan{dtype: dtype, h: sha256.New(), ids: idRange{Min: 0, Max: -1}, vocab: vocab, badAt: -1}
}

// tokens takes whole tokens.
func (s *binScan) tokens(b []byte) {
	r := extendRange(idRange{0, -1}, b, s.dtype)
	if s.vocab > 0 && s.badAt < 0 && r.Min <= r.Max && (s.outside(r.Min) || s.outside(r.Max)) {
		for i := 0; i < len(b)/s.dtype.Size(); i++ {
			if v := tokenAt(b, i, s.dtype); s.outside(v) {
				s.badAt, s.badID = s.tokensIn+int64(i), v
				break
			}
		}
	}
	s.ids = mergeRange(s.ids, r)
	s.tokensIn += int64(len(b) / s.dtype.Size())
}

// outside reports whether id v lies outside [0, vocab). A vocab of math.MaxInt (a bare
// signed shard's check for negative ids alone) has no upper end: int64's largest id,
// 2^63-1, is inside it.
func (s *binScan) outside(v int64) bool {
	return v < 0 || (s.vocab < math.MaxInt && v >= int64(s.vocab))
}

// mergeRange is the range covering a and b.
func mergeRange(a, b idRange) idRange {
	switch {
	case a.Max < a.Min:
		return b
	case b.Max < b.Min:
		return a
	}
	return idRange{min(a.Min, b.Min), max(a.Max, b.Max)}
}

// Write takes the next bytes of the .bin.
func (s *binScan) Write(p []byte) (int, error) {
	s.h.Write(p)
	s.n += int64(len(p))
	item := s.dtype.Size()
	b := p
	if len(s.carry) > 0 {
		need := item - len(s.carry)
		if len(b) < need {
			s.carry = append(s.carry, b...)
			return len(p), nil
		}
		s.carry = append(s.carry, b[:need]...)
		s.tokens(s.carry)
		s.carry, b = s.carry[:0], b[need:]
	}
	whole := len(b) / item * item
	s.tokens(b[:whole])
	s.carry = append(s.carry, b[whole:]...)
	return len(p), nil
}

// sum is the sha256 of what was written, in hex.
func (s *binScan) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// extendRange widens r by the ids in b (whole tokens of dtype).
func extendRange(r idRange, b []byte, dtype DType) idRange {
	if len(b) == 0 {
		return r
	}
	lo, hi := r.Min, r.Max
	if hi < lo { // empty so far
		lo, hi = tokenAt(b, 0, dtype), tokenAt(b, 0, dtype)
	}
	switch dtype {
	case Uint16:
		l, h := uint16(lo), uint16(hi)
		for _, v := range viewUint16(b) { // zero copy where it can (the reader's views)
			l, h = min(l, v), max(h, v)
		}
		return idRange{int64(l), int64(h)}
	case Int32:
		l, h := int32(lo), int32(hi)
		for _, v := range viewInt32(b) {
			l, h = min(l, v), max(h, v)
		}
		return idRange{int64(l), int64(h)}
	}
	for i := 0; i < len(b)/dtype.Size(); i++ {
		v := tokenAt(b, i, dtype)
		lo, hi = min(lo, v), max(hi, v)
	}
	return idRange{lo, hi}
}

// tokenAt decodes token i of b.
func tokenAt(b []byte, i int, dtype DType) int64 {
	switch dtype {
	case Uint8:
		return int64(b[i])
	case Int8:
		return int64(int8(b[i]))
	case Int16:
		return int64(int16(binary.LittleEndian.Uint16(b[2*i:])))
	case Uint16:
		return int64(binary.LittleEndian.Uint16(b[2*i:]))
	case Int32:
		return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	case Int64:
		return int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return 0
}

// scanFile runs a binScan over the file at path, stopping when ctx ends. It reads the
// file rather than the mapping the Reader holds: faulting in a fresh mapping page by
// page costs more than the copy.
func scanFile(ctx context.Context, path string, dtype DType) (*binScan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	defer f.Close()
	s := newBinScan(dtype, 0)
	if _, err := io.CopyBuffer(s, &ctxReader{ctx, f}, make([]byte, 1<<20)); err != nil {
		return nil, fmt.Errorf("shards: read %s: %w", path, err)
	}
	return s, nil
}

// hintManifestVocab is the hint for an id outside the manifest's tokenizer's vocabulary.
const hintManifestVocab = "the shard's ids were not made by the manifest's tokenizer: re-run the stage that wrote the dataset with the tokenizer the manifest names (or fix the manifest's tokenizer)"

// vocabHint is the hint for id, outside [0, vocab), the vocabulary a reader checks the
// ids against: the manifest's tokenizer's (m, nil for a bare shard, which names none), or
// the model's vocab_size when that is smaller or there is no manifest. An id the model
// cannot embed is the model's vocab_size's fault as likely as the data's; a negative id,
// or one outside the manifest's tokenizer too, is the data's alone.
func vocabHint(m *Manifest, vocab int, id int64) string {
	switch {
	case id < 0:
		return hintNegativeID + "; `shards verify` on the dataset finds every damaged file"
	case m == nil:
		return "a bare shard does not record its tokenizer, so its ids are checked against the model's vocab_size: set vocab_size to its tokenizer's vocabulary size; if it is that already, the .bin is damaged or another tokenizer's: restore it, or re-run the stage that wrote it"
	case m.Tokenizer.VocabSize == vocab:
		return hintManifestVocab
	case id >= int64(m.Tokenizer.VocabSize):
		return fmt.Sprintf("it is outside the %d ids of the manifest's tokenizer %s too, so a larger vocab_size would not help: ", m.Tokenizer.VocabSize, m.Tokenizer.Name) + hintManifestVocab
	}
	return fmt.Sprintf("the model's vocab_size %d is smaller than the %d ids of the manifest's tokenizer %s: set vocab_size to at least %d, or leave it unset to take the manifest's",
		vocab, m.Tokenizer.VocabSize, m.Tokenizer.Name, m.Tokenizer.VocabSize)
}

// hintNegativeID is the hint for a negative id, which no tokenizer makes.
const hintNegativeID = "the .bin is damaged (no tokenizer makes a negative id): restore it, or re-run the stage that wrote it"

// vocabError is the error for the first token of bin (a .bin described by ix, named
// name) outside [0, vocab) of what, with the hint vocabHint gives for it and m.
func vocabError(name string, bin []byte, ix *Index, vocab int, what string, m *Manifest) error {
	s := newBinScan(ix.dtype, vocab)
	s.tokens(bin[:len(bin)/ix.dtype.Size()*ix.dtype.Size()])
	if s.badAt < 0 {
		return nil
	}
	return vocabErrAt(name, s.badAt, s.badID, ix, vocab, what, vocabHint(m, vocab, s.badID))
}

// vocabErrAt is the error for token tok of the .bin named name (ix, when not nil,
// places it in its document), id v, outside [0, vocab) of what; hint is what to do
// ("": hintManifestVocab, or hintNegativeID for a negative id). A negative id is
// ErrNegativeID, named as such rather than as outside a vocabulary.
func vocabErrAt(name string, tok, v int64, ix *Index, vocab int, what, hint string) error {
	item := int64(1)
	where := ""
	if ix != nil {
		item = int64(ix.dtype.Size())
		off := tok * item
		doc := sort.Search(ix.n, func(d int) bool { return ix.Pointer(d) > off }) - 1
		where = fmt.Sprintf("document %d, token %d", doc, (off-ix.Pointer(max(doc, 0)))/item)
	}
	if v < 0 {
		if hint == "" {
			hint = hintNegativeID
		}
		return formatErr(ErrNegativeID, name, tok*item, where, hint, "token id %d is negative", v)
	}
	if hint == "" {
		hint = hintManifestVocab
	}
	return formatErr(ErrVocab, name, tok*item, where, hint, "token id %d is outside the vocabulary [0,%d) of %s", v, vocab, what)
}
