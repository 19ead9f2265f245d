package loader

import (
	"fmt"
	"math"

	"gptkit/shards"
)

// Sample orders accepted by NewSamples.
const (
	// OrderNeoX is GPT-NeoX's GPT2Dataset order (BuildNeoXIndex), sample for sample.
	OrderNeoX = "neox"
	// OrderDefault is gptkit's own order. For now it is the same as OrderNeoX: the
	// documents of the split, packed and shuffled with BuildNeoXIndex. It is a separate
	// name so that a faster construction can replace it later without changing what
	// "neox" means.
	OrderDefault = "default"
)

// Samples is the sequence of training samples over a document range of an opened
// dataset: sample i is SeqLen+1 consecutive tokens of the shuffled, concatenated
// documents, exactly GPT-NeoX's GPT2Dataset.__getitem__(i) for a split holding
// documents [Docs[0], Docs[1]). A Samples only reads the dataset's mapping, so
// Sample may be called from several goroutines at once.
type Samples struct {
	Dataset *shards.Dataset
	// Docs is the global document range [start, end) the samples are drawn from.
	Docs  [2]int64
	Order string
	// Index is the GPT-NeoX index over the range's documents; its document
	// positions are relative to Docs[0].
	Index *NeoXIndex

	sizes []int32 // sizes[k]: tokens of document Docs[0]+k
}

// NewSamples builds the sample order over documents [docs[0], docs[1]) of d (from
// TrainDocuments or SplitRanges): seqLen is L (samples have L+1 tokens),
// numSamples the number of samples the run needs (GPT-NeoX:
// train_iters*train_batch_size; the index holds at least that many, see
// NeoXIndex.Len), seed the shuffle seed (GPT-NeoX's neox_args.seed, default 1234)
// and order OrderNeoX or OrderDefault ("" means OrderDefault).
func NewSamples(d *shards.Dataset, docs [2]int64, seqLen int, numSamples int64, seed uint32, order string) (*Samples, error) {
	switch order {
	case "":
		order = OrderDefault
	case OrderDefault, OrderNeoX:
	default:
		return nil, fmt.Errorf("loader: unknown sample order %q (want %q or %q)", order, OrderDefault, OrderNeoX)
	}
	if docs[0] < 0 || docs[1] < docs[0] || docs[1] > d.Len() {
		return nil, fmt.Errorf("loader: document range [%d,%d) is not within the dataset's %d documents", docs[0], docs[1], d.Len())
	}
	if docs[1] == docs[0] {
		return nil, fmt.Errorf("loader: the training split of %d documents is empty (too few documents for the split?)", d.Len())
	}
	if docs[1]-docs[0] > math.MaxInt32 {
		return nil, fmt.Errorf("loader: %d documents exceed GPT-NeoX's int32 doc_idx", docs[1]-docs[0])
	}
	sizes := make([]int32, docs[1]-docs[0])
	for k := range sizes {
		n := d.Size(docs[0] + int64(k))
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("loader: document %d has %d tokens, more than int32 offsets hold", docs[0]+int64(k), n)
		}
		sizes[k] = int32(n)
	}
	x, err := BuildNeoXIndex(sizes, seqLen, numSamples, seed)
	if err != nil {
		return nil, err
	}
	return &Samples{Dataset: d, Docs: docs, Order: order, Index: x, sizes: sizes}, nil
}

// Len is the number of samples: NeoXIndex.Len, at least the numSamples asked for.
func (s *Samples) Len() int64 { return s.Index.Len() }

// SeqLen is L; every sample has L+1 tokens.
func (s *Samples) SeqLen() int { return s.Index.SeqLen }

// Sample appends the L+1 token ids of sample i to dst and returns it. Tokens are
// read from the shards' mapping in place (uint16 and int32 shards; other dtypes
// through a copy of the document). i must be in [0, Len()); Sample panics
// otherwise, like a slice index.
func (s *Samples) Sample(i int64, dst []int) []int {
	if i < 0 || i >= s.Len() {
		panic(fmt.Sprintf("loader: sample %d out of range [0,%d)", i, s.Len()))
	}
	var buf [8]Span
	for _, sp := range s.Index.AppendSpans(buf[:0], i, s.sizes) {
		dst = s.appendTokens(dst, s.Docs[0]+int64(sp.Doc), int(sp.Off), int(sp.Off+sp.Len))
	}
	return dst
}

// appendTokens appends tokens [from, to) of global document doc.
func (s *Samples) appendTokens(dst []int, doc int64, from, to int) []int {
	sh, j := s.Dataset.Locate(doc)
	r := s.Dataset.Shard(sh)
	switch r.DType() {
	case shards.Uint16:
		for _, v := range r.DocUint16(j)[from:to] {
			dst = append(dst, int(v))
		}
	case shards.Int32:
		for _, v := range r.DocInt32(j)[from:to] {
			dst = append(dst, int(v))
		}
	default:
		dst = append(dst, r.Tokens(j)[from:to]...)
	}
	return dst
}
