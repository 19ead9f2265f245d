package loader

import (
	"fmt"
	"math"
	"sort"

	"gptkit/shards"
)

// Sample orders accepted by NewSamples and Open.
const (
	// OrderNeoX is GPT-NeoX's GPT2Dataset order (BuildNeoXIndex), sample for sample.
	OrderNeoX = "neox"
	// OrderDefault is gptkit's own order (BuildDefaultIndex): documents shuffled per
	// epoch, samples shuffled within their epoch.
	OrderDefault = "default"
)

// CheckOrder returns order with "" replaced by OrderDefault, or an error for an
// unknown order.
func CheckOrder(order string) (string, error) {
	switch order {
	case "":
		return OrderDefault, nil
	case OrderDefault, OrderNeoX:
		return order, nil
	}
	return "", fmt.Errorf("loader: unknown sample order %q (want %q or %q)", order, OrderDefault, OrderNeoX)
}

// BuildIndex builds the index of order (OrderNeoX or OrderDefault) over documents
// of the given sizes.
func BuildIndex(order string, sizes []int32, seqLen int, numSamples int64, seed uint32) (*Index, error) {
	order, err := CheckOrder(order)
	if err != nil {
		return nil, err
	}
	if order == OrderNeoX {
		return BuildNeoXIndex(sizes, seqLen, numSamples, seed)
	}
	return BuildDefaultIndex(sizes, seqLen, numSamples, seed)
}

// Samples is the sequence of training samples over a document range of a dataset:
// sample i is SeqLen+1 consecutive tokens of the shuffled, concatenated documents;
// with OrderNeoX exactly GPT-NeoX's GPT2Dataset.__getitem__(i) for a split holding
// documents [Docs[0], Docs[1]). A Samples only reads the shards' mapping, so its
// methods may be called from several goroutines at once.
type Samples struct {
	// Dataset is the dataset the samples are drawn from (nil for a bare shard
	// opened by Open from a PREFIX.bin/PREFIX.idx pair).
	Dataset *shards.Dataset
	// Docs is the global document range [start, end) the samples are drawn from.
	Docs  [2]int64
	Order string
	// Index is the index over the range's documents; its document positions are
	// relative to Docs[0].
	Index *Index

	sizes   []int32 // sizes[k]: tokens of document Docs[0]+k
	readers []*shards.Reader
	starts  []int64 // starts[s]: global index of readers[s]'s first document
}

// NewSamples builds the sample order over documents [docs[0], docs[1]) of d (from
// SplitDocuments, TrainDocuments or SplitRanges): seqLen is L (samples have L+1
// tokens), numSamples the number of samples the run needs (GPT-NeoX:
// train_iters*train_batch_size; see Index.Len for how many the index holds),
// seed the shuffle seed (GPT-NeoX's neox_args.seed, default 1234) and order
// OrderNeoX or OrderDefault ("" means OrderDefault). It does not cache the index;
// Open does.
func NewSamples(d *shards.Dataset, docs [2]int64, seqLen int, numSamples int64, seed uint32, order string) (*Samples, error) {
	order, err := CheckOrder(order)
	if err != nil {
		return nil, err
	}
	s, err := newSamples(datasetReaders(d), docs)
	if err != nil {
		return nil, err
	}
	s.Dataset = d
	x, err := BuildIndex(order, s.sizes, seqLen, numSamples, seed)
	if err != nil {
		return nil, err
	}
	s.Order, s.Index = order, x
	return s, nil
}

func datasetReaders(d *shards.Dataset) []*shards.Reader {
	rs := make([]*shards.Reader, d.NumShards())
	for i := range rs {
		rs[i] = d.Shard(i)
	}
	return rs
}

// newSamples prepares a Samples over documents docs of the shards rs (concatenated),
// without its index.
func newSamples(rs []*shards.Reader, docs [2]int64) (*Samples, error) {
	s := &Samples{Docs: docs, readers: rs, starts: []int64{0}}
	for _, r := range rs {
		s.starts = append(s.starts, s.starts[len(s.starts)-1]+int64(r.Len()))
	}
	total := s.starts[len(s.starts)-1]
	if docs[0] < 0 || docs[1] < docs[0] || docs[1] > total {
		return nil, fmt.Errorf("loader: document range [%d,%d) is not within the dataset's %d documents", docs[0], docs[1], total)
	}
	if docs[1] == docs[0] {
		return nil, fmt.Errorf("loader: the split of %d documents is empty (too few documents for the split?)", total)
	}
	if docs[1]-docs[0] > math.MaxInt32 {
		return nil, fmt.Errorf("loader: %d documents exceed GPT-NeoX's int32 doc_idx: cut the dataset into several and blend them", docs[1]-docs[0])
	}
	s.sizes = make([]int32, docs[1]-docs[0])
	k := 0
	for sh, r := range rs {
		lo, hi := max(docs[0], s.starts[sh]), min(docs[1], s.starts[sh+1])
		for g := lo; g < hi; g++ {
			n := r.Size(int(g - s.starts[sh]))
			if n > math.MaxInt32 {
				return nil, fmt.Errorf("loader: %s: document %d has %d tokens, more than int32 offsets hold", r.Name(), g-s.starts[sh], n)
			}
			s.sizes[k] = int32(n)
			k++
		}
	}
	return s, nil
}

// Len is the number of samples (Index.Len).
func (s *Samples) Len() int64 { return s.Index.Len() }

// SeqLen is L; every sample has L+1 tokens.
func (s *Samples) SeqLen() int { return s.Index.SeqLen }

// Sizes returns the token counts of the range's documents (read-only).
func (s *Samples) Sizes() []int32 { return s.sizes }

// getitemLen is the number of samples GPT-NeoX's GPT2Dataset.__getitem__ reads:
// every packed sample, so for OrderNeoX one more than Len (its __len__ leaves out
// shuffle_idx[N-1], its __getitem__ does not). A Blend reads its sources' samples
// by __getitem__, as BlendableDataset does.
func (s *Samples) getitemLen() int64 { return int64(len(s.Index.ShuffleIdx)) }

// spans returns sample i's document runs; i must be in [0, limit), limit being Len
// or getitemLen.
func (s *Samples) spans(buf []Span, i, limit int64) []Span {
	if i < 0 || i >= limit {
		panic(fmt.Sprintf("loader: sample %d out of range [0,%d)", i, limit))
	}
	return s.Index.AppendSpans(buf, i, s.sizes)
}

// locate maps global document doc to a reader and its index there.
func (s *Samples) locate(doc int64) (*shards.Reader, int) {
	sh := 0
	if len(s.readers) > 1 {
		sh = sort.Search(len(s.readers), func(k int) bool { return s.starts[k+1] > doc })
	}
	return s.readers[sh], int(doc - s.starts[sh])
}

// Sample appends the L+1 token ids of sample i to dst and returns it. Tokens are
// read from the shards' mapping in place. i must be in [0, Len()); Sample panics
// otherwise, like a slice index.
func (s *Samples) Sample(i int64, dst []int) []int { return s.sample(i, s.Len(), dst) }

// sample is Sample for i in [0, limit).
func (s *Samples) sample(i, limit int64, dst []int) []int {
	var buf [8]Span
	for _, sp := range s.spans(buf[:0], i, limit) {
		r, j := s.locate(s.Docs[0] + int64(sp.Doc))
		from, to := int(sp.Off), int(sp.Off+sp.Len)
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
	}
	return dst
}

// SampleInt32 appends the L+1 token ids of sample i to dst as int32 and returns
// it: uint16 shards are widened and int32 shards copied straight from the mapping,
// with no intermediate slice. i must be in [0, Len()).
func (s *Samples) SampleInt32(i int64, dst []int32) []int32 {
	return s.sampleInt32(i, s.Len(), dst)
}

// sampleInt32 is SampleInt32 for i in [0, limit).
func (s *Samples) sampleInt32(i, limit int64, dst []int32) []int32 {
	var buf [8]Span
	spans := s.spans(buf[:0], i, limit)
	n := len(dst)
	dst = grow(dst, s.Index.SeqLen+1)
	for _, sp := range spans {
		r, j := s.locate(s.Docs[0] + int64(sp.Doc))
		from, to := int(sp.Off), int(sp.Off+sp.Len)
		out := dst[n : n+int(sp.Len)]
		switch r.DType() {
		case shards.Uint16:
			widen(out, r.DocUint16(j)[from:to])
		case shards.Int32:
			copy(out, r.DocInt32(j)[from:to])
		default:
			for k, v := range r.Tokens(j)[from:to] {
				out[k] = int32(v)
			}
		}
		n += int(sp.Len)
	}
	return dst
}

// grow extends dst by n elements, reallocating only when its capacity is short.
func grow(dst []int32, n int) []int32 {
	if cap(dst)-len(dst) < n {
		nd := make([]int32, len(dst), max(2*cap(dst), len(dst)+n))
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}

// widen converts uint16 ids to int32; len(dst) == len(src).
func widen(dst []int32, src []uint16) {
	dst = dst[:len(src)]
	for k, v := range src {
		dst[k] = int32(v)
	}
}

// SameOrderFor reports whether the samples of src would be the same, in the same
// order, had numSamples been asked for instead of the count it was built for: an
// index depends on the count only through its number of epochs (BuildDefaultIndex,
// BuildNeoXIndex), so a run asking for more samples within the same epochs reads
// what the shorter run would have. False where it cannot tell: a blend, whose
// sources' counts are the blend's shares.
func SameOrderFor(src Source, numSamples int64) bool {
	s, ok := src.(*Samples)
	if !ok || s.Index == nil {
		return false
	}
	epochs := func(n int64) int64 {
		_, e, _, err := numEpochs(s.sizes, s.Index.SeqLen, n)
		if err != nil {
			return -1
		}
		return e
	}
	// (numSamples is the count the run recorded, one more where GPT-NeoX's
	// off-by-one asked for it, as the index's own.)
	return epochs(numSamples) == int64(s.Index.Epochs)
}
