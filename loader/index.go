package loader

import (
	"fmt"
	"math"
)

// Index is the packed-sample index of one split of one dataset: the document order,
// the packed sample boundaries and the sample order. For OrderNeoX these are exactly
// GPT-NeoX's GPT2Dataset arrays (megatron/data/gpt2_dataset.py
// _build_index_mappings, pack_impl "packed", cached by GPT-NeoX as
// *_doc_idx.npy, *_sample_idx.npy and *_shuffle_idx.npy), built by
// [BuildNeoXIndex]; for OrderDefault they are gptkit's own order with the same
// layout, built by [BuildDefaultIndex].
type Index struct {
	// Order is OrderNeoX or OrderDefault: how the arrays were built.
	Order string
	// SeqLen is the sequence length L; every sample has L+1 tokens.
	SeqLen int
	// NumSamples is the number of samples that was asked for.
	NumSamples int64
	// Seed is the seed the index was built with.
	Seed uint32
	// TokensPerEpoch is the sum of the document sizes.
	TokensPerEpoch int64
	// Epochs is the smallest e with (e*TokensPerEpoch-1)/SeqLen >= NumSamples.
	Epochs int
	// DocIdx is doc_idx: the document positions 0..len(sizes)-1 tiled Epochs
	// times and shuffled. GPT-NeoX stores document ids (the split's
	// `documents`); for a split that starts at document s, the id is
	// s + DocIdx[k]. The shuffle does not depend on the values.
	DocIdx []int32
	// SampleIdx is sample_idx flattened: for k in [0, N], SampleIdx[2k] is a
	// position in DocIdx and SampleIdx[2k+1] an offset into that document.
	// Sample j spans from entry j to entry j+1, both ends inclusive.
	SampleIdx []int32
	// ShuffleIdx is shuffle_idx: a permutation of [0, N), the packed sample
	// each sample index reads.
	ShuffleIdx []uint32
}

// NeoXIndex is the name this type had when it only held GPT-NeoX's order.
type NeoXIndex = Index

// Span is a run of consecutive tokens of one document within a sample.
type Span struct {
	// Doc is the document position in the split (a value of DocIdx).
	Doc int32
	// Off is the first token's offset in the document.
	Off int32
	// Len is the number of tokens.
	Len int32
}

// numEpochs is GPT-NeoX's _num_epochs: the smallest e >= 1 with
// (e*tpe-1)/L >= numSamples, checked against the int32 doc_idx and the uint32
// shuffle_idx; it also returns N = (e*tpe-1)/L.
func numEpochs(sizes []int32, seqLen int, numSamples int64) (tpe, epochs, n int64, err error) {
	if seqLen < 1 || seqLen >= math.MaxInt32 {
		return 0, 0, 0, fmt.Errorf("loader: sequence length %d out of range", seqLen)
	}
	if numSamples < 0 {
		return 0, 0, 0, fmt.Errorf("loader: negative sample count %d", numSamples)
	}
	for i, s := range sizes {
		if s < 0 {
			return 0, 0, 0, fmt.Errorf("loader: document %d has negative size %d", i, s)
		}
		tpe += int64(s)
	}
	if tpe == 0 {
		return 0, 0, 0, errNoTokens
	}
	L := int64(seqLen)
	epochs = 1
	if numSamples > 0 {
		// Smallest e with (e*tpe-1)/L >= numSamples, i.e. e*tpe >= numSamples*L+1.
		if numSamples > (math.MaxInt64-1)/L {
			return 0, 0, 0, fmt.Errorf("loader: %d samples of %d tokens overflow", numSamples, seqLen)
		}
		need := numSamples*L + 1
		epochs = (need-1)/tpe + 1 // need >= 1: no overflow, as (need+tpe-1)/tpe had near 2^63
	}
	if epochs > math.MaxInt32/int64(max(len(sizes), 1)) {
		return 0, 0, 0, fmt.Errorf("loader: %d epochs of %d documents exceed GPT-NeoX's int32 doc_idx: ask for fewer samples (fewer epochs of the data), or cut the dataset into several and blend them", epochs, len(sizes))
	}
	if epochs > math.MaxInt64/tpe {
		return 0, 0, 0, fmt.Errorf("loader: %d epochs of %d tokens overflow", epochs, tpe)
	}
	n = (epochs*tpe - 1) / L
	if n >= math.MaxUint32-1 {
		return 0, 0, 0, fmt.Errorf("loader: %d samples (whole epochs of the split at this seq_len) need GPT-NeoX's int64 shuffle_idx, which is not supported: cut the dataset into several of fewer tokens each and blend them, or raise seq_len", n)
	}
	return tpe, epochs, n, nil
}

// buildSampleIdx is helpers.build_sample_idx (int32): n samples of seqLen+1
// tokens walking docIdx, each starting on the previous one's last token.
func buildSampleIdx(sizes []int32, docIdx []int32, seqLen int, n int64) []int32 {
	sampleIdx := make([]int32, 2*(n+1))
	var pos int64 // index into docIdx
	var off int32 // offset in the current document
	for k := int64(1); k <= n; k++ {
		remaining := int32(seqLen) + 1
		for remaining != 0 {
			docLen := sizes[docIdx[pos]] - off
			remaining -= docLen
			if remaining <= 0 {
				off += remaining + docLen - 1
				remaining = 0
			} else {
				pos++
				off = 0
			}
		}
		sampleIdx[2*k] = int32(pos)
		sampleIdx[2*k+1] = off
	}
	return sampleIdx
}

// NumPacked returns N, the number of packed samples in sample_idx.
func (x *Index) NumPacked() int64 { return int64(len(x.SampleIdx)/2) - 1 }

// Len returns the number of samples the index serves. For OrderDefault that is
// N, every packed sample. For OrderNeoX it is the dataset length GPT-NeoX
// reports, which is N-1, not N: GPT2Dataset.__len__ returns
// min(shuffle_idx.shape[0]-1, sample_idx.shape[0]-1) = min(N-1, N). The
// sampler therefore never asks for sample N-1, and the shuffled-away packed
// sample ShuffleIdx[N-1] is never seen (when N is 0 the length is 0, not -1).
// N is at least the NumSamples asked for, so Len is too for OrderDefault; for
// OrderNeoX it is one less when N equals NumSamples exactly (GPT-NeoX's own
// off-by-one: ask for one more sample when every one is needed).
func (x *Index) Len() int64 {
	if x.Order == OrderDefault {
		return int64(len(x.ShuffleIdx))
	}
	return max(int64(len(x.ShuffleIdx))-1, 0)
}

// Sample returns where sample i (for OrderNeoX, GPT2Dataset.__getitem__(i))
// lies: with j = ShuffleIdx[i], it runs from token offStart of DocIdx[posStart]
// to token offEnd of DocIdx[posEnd], both inclusive, through every document in
// between; that is always SeqLen+1 tokens. posStart and posEnd are positions
// in DocIdx. i must be in [0, len(ShuffleIdx)); Sample panics otherwise.
func (x *Index) Sample(i int64) (posStart, offStart, posEnd, offEnd int64) {
	j := int64(x.ShuffleIdx[i])
	return int64(x.SampleIdx[2*j]), int64(x.SampleIdx[2*j+1]),
		int64(x.SampleIdx[2*j+2]), int64(x.SampleIdx[2*j+3])
}

// AppendSpans appends to dst the document token runs of sample i, in order;
// their lengths add up to SeqLen+1. Reading those tokens and converting them
// to int64 gives GPT-NeoX's "text" tensor for the sample. i must be in
// [0, len(ShuffleIdx)).
func (x *Index) AppendSpans(dst []Span, i int64, sizes []int32) []Span {
	p0, o0, p1, o1 := x.Sample(i)
	if p0 == p1 {
		return append(dst, Span{Doc: x.DocIdx[p0], Off: int32(o0), Len: int32(o1 - o0 + 1)})
	}
	d := x.DocIdx[p0]
	dst = append(dst, Span{Doc: d, Off: int32(o0), Len: sizes[d] - int32(o0)})
	for p := p0 + 1; p < p1; p++ {
		d = x.DocIdx[p]
		dst = append(dst, Span{Doc: d, Off: 0, Len: sizes[d]})
	}
	return append(dst, Span{Doc: x.DocIdx[p1], Off: 0, Len: int32(o1 + 1)})
}
