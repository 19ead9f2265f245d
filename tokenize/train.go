package tokenize

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
)

// Byte-level BPE training, as Hugging Face's BpeTrainer does it for a tokenizer with a
// ByteLevel pre-tokenizer (initial alphabet = ByteLevel.alphabet()):
//
//   - train_count.go: pre-tokenize the texts (GPT-2 rules) and count the pieces ("words")
//     on several goroutines;
//   - train_merge.go: the merge loop over the distinct words, with incremental pair counts;
//   - train_json.go: writing the result as a tokenizer.json.
//
// Ids: the specials first (0..len(Special)-1), then the 256 one-byte tokens ordered by
// their byte-level character (as HF sorts its alphabet; GPT-2's vocab has the same
// order), then one token per merge. The most frequent pair is merged first; ties go to
// the pair with the smallest (left id, right id), which is HF's rule. On the same
// pre-tokenized words this gives HF's merges exactly (checked by a test against HF's
// trainer); see train_merge.go for the corner case where HF's trainer departs from it.

// DefaultMinFrequency is the MinFrequency used when TrainOptions.MinFrequency is 0.
const DefaultMinFrequency = 2

// TrainOptions configures Train.
type TrainOptions struct {
	// VocabSize is the number of tokens to end with, specials and the 256 byte tokens
	// included. It must be at least len(Special)+256. Training stops early, with a
	// smaller vocabulary, when no pair occurs MinFrequency times.
	VocabSize int
	// Special tokens (e.g. "<|endoftext|>") get ids 0..len(Special)-1 in this order, as
	// HF's trainer gives them. They are cut out of the training texts (never counted as
	// text) and written as special added tokens. Each must be printable ASCII without
	// spaces (0x21-0x7E), so that it is its own byte-level vocabulary key, and at least
	// 2 bytes long (a single character would collide with a byte token).
	Special []string
	// MinFrequency is the smallest (weighted) number of occurrences for a pair to be
	// merged. 0 means DefaultMinFrequency (2); use 1 to merge any pair that occurs, as
	// HF's trainer does with its default min_frequency of 0.
	MinFrequency int
	// Workers is the number of goroutines that pre-tokenize and count; 0 means
	// GOMAXPROCS. The result does not depend on it.
	Workers int
	// Progress, if not nil, is called from Train's goroutine (never concurrently) with
	// stage "count" (done = bytes of text read so far; total = -1, and = done on the
	// stage's last call) and stage "merge" (done = merges made, total = merges wanted).
	Progress func(stage string, done, total int64)
}

// TrainStats describes the training input and result.
type TrainStats struct {
	Texts       int64 // texts received from the source (chunks count separately)
	Bytes       int64 // bytes of text received
	Words       int64 // pre-tokenized pieces counted
	UniqueWords int64 // distinct pieces
	Merges      int   // merges learned
}

// Trained is the result of Train: a byte-level BPE vocabulary and its merges.
type Trained struct {
	special []string
	keys    []string    // id -> vocab key: byte-level characters; specials as themselves
	merges  [][2]uint32 // (left id, right id) in rank order
	stats   TrainStats
}

// TrainTexts adapts a slice of texts to the texts argument of Train.
func TrainTexts(texts []string) func(yield func(string) bool) error {
	return func(yield func(string) bool) error {
		for _, s := range texts {
			if !yield(s) {
				return nil
			}
		}
		return nil
	}
}

// Train learns a byte-level BPE tokenizer from texts with HF BpeTrainer semantics (see
// the comment at the top of train.go for the ids and the tie rule).
//
// texts is called once, from Train's goroutine; it calls yield once per text (usually a
// document; a long document may be handed over in pieces cut with TrainCut) and returns
// nil at the end or the error that stopped it. It must return when yield returns false,
// which happens when ctx is done. Text is pre-tokenized as the GPT-2 / HF ByteLevel
// pre-tokenizer does it, after cutting out the special tokens and replacing invalid
// UTF-8 as Encode does, so training sees exactly the pieces encoding will see.
//
// The result depends only on the texts' contents and on opt, not on Workers, nor on
// how the texts are cut into calls as long as the cuts are TrainCut points.
// Memory: the counting maps hold each distinct piece once (about 100 bytes plus its
// length per distinct piece and worker); the merge loop adds about 12 bytes per byte of
// distinct pieces. The size of the corpus itself only costs time.
func Train(ctx context.Context, texts func(yield func(string) bool) error, opt TrainOptions) (*Trained, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if opt.MinFrequency == 0 {
		opt.MinFrequency = DefaultMinFrequency
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	words, stats, err := countWords(ctx, texts, opt)
	if err != nil {
		return nil, err
	}
	m := newMerger(opt.Special, words)
	words = nil // let the counting map go once the merger holds the words
	if err := m.run(ctx, opt.VocabSize, int64(opt.MinFrequency), opt.Progress); err != nil {
		return nil, err
	}
	stats.Merges = len(m.merges)
	return &Trained{special: append([]string(nil), opt.Special...), keys: m.keys, merges: m.merges, stats: stats}, nil
}

// Validate reports the first problem with o that would make Train fail before reading
// any text: a special token that breaks the rules on TrainOptions.Special, a vocabulary
// smaller than the specials plus the 256 byte tokens, a negative MinFrequency.
func (o TrainOptions) Validate() error {
	seen := make(map[string]bool, len(o.Special))
	for _, s := range o.Special {
		if len(s) < 2 {
			return fmt.Errorf("tokenize: train: special token %q must be at least 2 characters (a single character is a byte token)", s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x21 || s[i] > 0x7E {
				return fmt.Errorf("tokenize: train: special token %q has byte 0x%02x; only printable ASCII without spaces is supported", s, s[i])
			}
		}
		if seen[s] {
			return fmt.Errorf("tokenize: train: special token %q is given twice", s)
		}
		seen[s] = true
	}
	if base := len(o.Special) + 256; o.VocabSize < base {
		return fmt.Errorf("tokenize: train: vocab size %d is below %d (%d special tokens + 256 byte tokens)", o.VocabSize, base, len(o.Special))
	}
	if o.VocabSize > pairLimit {
		return fmt.Errorf("tokenize: train: vocab size %d is over %d, the most this package loads (ids and merge ranks below 2^20 - 1)", o.VocabSize, pairLimit)
	}
	if o.MinFrequency < 0 {
		return fmt.Errorf("tokenize: train: negative min frequency %d", o.MinFrequency)
	}
	return nil
}

// VocabSize is the number of tokens: specials, byte tokens and merge results.
func (m *Trained) VocabSize() int { return len(m.keys) }

// Stats describes the training input and result.
func (m *Trained) Stats() TrainStats { return m.stats }

// Merges returns the learned merges in rank order, each as the raw bytes of its left and
// right token.
func (m *Trained) Merges() [][2]string {
	out := make([][2]string, len(m.merges))
	for i, p := range m.merges {
		out[i] = [2]string{m.rawToken(p[0]), m.rawToken(p[1])}
	}
	return out
}

// Token returns the raw bytes of token id (a special's content as is), or "" if id is
// out of range.
func (m *Trained) Token(id int) string {
	if id < 0 || id >= len(m.keys) {
		return ""
	}
	return m.rawToken(uint32(id))
}

func (m *Trained) rawToken(id uint32) string {
	if int(id) < len(m.special) {
		return m.keys[id]
	}
	raw, _ := byteLevelDecode(m.keys[id])
	return raw
}

// Tokenizer loads the trained tokenizer for encoding, through the same tokenizer.json
// WriteHFJSON writes.
func (m *Trained) Tokenizer(name string) (*Tokenizer, error) {
	var buf bytes.Buffer
	if err := m.WriteHFJSON(&buf); err != nil {
		return nil, err
	}
	return LoadHFJSON(buf.Bytes(), name)
}
