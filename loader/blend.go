package loader

import (
	"errors"
	"fmt"
)

// Blend mixes several sources by weight exactly as GPT-NeoX's BlendableDataset
// does: blended sample k is sample SampleIndex[k] of source DatasetIndex[k], the
// assignment BlendNeoX computes (each sample goes to the source furthest behind its
// share). It is the same for both orders: there is nothing random in it.
type Blend struct {
	// Sources are the blended sources, all with the same SeqLen.
	Sources []Source
	// Weights are the weights normalized to sum to 1.
	Weights []float64
	// DatasetIndex and SampleIndex are BlendableDataset's dataset_index and
	// dataset_sample_index, over the blend's full size (the sum of the sources'
	// lengths, as GPT-NeoX sets it).
	DatasetIndex []uint8
	SampleIndex  []int64

	n int64
}

// NewBlend blends sources with weights (any positive scale; they are normalized
// as GPT-NeoX does), building the index with BlendNeoX over the sum of the
// sources' lengths. GPT-NeoX sizes each source for ceil(w*N*1.005) samples
// (NeoXBlendWeights) so that the first N blended samples stay within every
// source; the blend's Len is the number of leading samples that do (normally well over N),
// where GPT-NeoX would fail on the first one that does not. A source's samples are
// read as GPT2Dataset.__getitem__ reads them: for OrderNeoX that includes the one
// its Len leaves out, which GPT-NeoX's blend reaches when a dataset's index holds
// exactly its ceil(w*N*1.005) samples.
func NewBlend(sources []Source, weights []float64) (*Blend, error) {
	if len(sources) != len(weights) {
		return nil, fmt.Errorf("loader: %d sources and %d blend weights", len(sources), len(weights))
	}
	var size int64
	for _, s := range sources {
		size += s.Len()
	}
	di, si, err := BlendNeoX(weights, size)
	if err != nil {
		return nil, err
	}
	return newBlend(sources, weights, di, si)
}

func newBlend(sources []Source, weights []float64, di []uint8, si []int64) (*Blend, error) {
	if len(sources) == 0 {
		return nil, errors.New("loader: a blend of no sources")
	}
	if len(di) != len(si) {
		return nil, fmt.Errorf("loader: blend index of %d datasets and %d samples", len(di), len(si))
	}
	for _, s := range sources[1:] {
		if s.SeqLen() != sources[0].SeqLen() {
			return nil, fmt.Errorf("loader: blended sources have sequence lengths %d and %d", sources[0].SeqLen(), s.SeqLen())
		}
	}
	sum := numpySum(weights)
	w := make([]float64, len(weights))
	for i, v := range weights {
		w[i] = v / sum
	}
	b := &Blend{Sources: sources, Weights: w, DatasetIndex: di, SampleIndex: si, n: int64(len(di))}
	for k := range di {
		d := int(di[k])
		if d >= len(sources) || si[k] < 0 || si[k] >= getitemLen(sources[d]) {
			b.n = int64(k)
			break
		}
	}
	return b, nil
}

// Len is the number of blended samples whose source sample exists (for Samples,
// below len(Index.ShuffleIdx), as GPT2Dataset.__getitem__ reads).
func (b *Blend) Len() int64 { return b.n }

// SeqLen is L; every sample has L+1 tokens.
func (b *Blend) SeqLen() int { return b.Sources[0].SeqLen() }

// Sample appends blended sample i's L+1 token ids to dst. i must be in [0, Len()).
func (b *Blend) Sample(i int64, dst []int) []int {
	if i < 0 || i >= b.n {
		panic(fmt.Sprintf("loader: blended sample %d out of range [0,%d)", i, b.n))
	}
	src, j := b.Sources[b.DatasetIndex[i]], b.SampleIndex[i]
	if s, ok := src.(*Samples); ok {
		return s.sample(j, s.getitemLen(), dst)
	}
	return src.Sample(j, dst)
}

// SampleInt32 appends blended sample i's L+1 token ids to dst as int32. i must be
// in [0, Len()).
func (b *Blend) SampleInt32(i int64, dst []int32) []int32 {
	if i < 0 || i >= b.n {
		panic(fmt.Sprintf("loader: blended sample %d out of range [0,%d)", i, b.n))
	}
	src, j := b.Sources[b.DatasetIndex[i]], b.SampleIndex[i]
	if s, ok := src.(*Samples); ok {
		return s.sampleInt32(j, s.getitemLen(), dst)
	}
	return src.SampleInt32(j, dst)
}

// getitemLen is how many of src's samples a blend reads: for Samples, every packed
// sample (GPT2Dataset.__getitem__'s range, one more than Len for OrderNeoX).
func getitemLen(src Source) int64 {
	if s, ok := src.(*Samples); ok {
		return s.getitemLen()
	}
	return src.Len()
}

// Locate returns the source and the source's sample that blended sample i reads, i
// in [0, Len()).
func (b *Blend) Locate(i int64) (source int, sample int64) {
	if i < 0 || i >= b.n {
		panic(fmt.Sprintf("loader: blended sample %d out of range [0,%d)", i, b.n))
	}
	return int(b.DatasetIndex[i]), b.SampleIndex[i]
}
