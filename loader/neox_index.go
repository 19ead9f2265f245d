package loader

// BuildNeoXIndex builds GPT-NeoX's GPT2Dataset index (gpt2_dataset.py,
// pack_impl "packed") for a split whose documents have the given token
// counts, in document order. seqLen is L, numSamples the number of samples
// GPT-NeoX asked for (train: train_iters*train_batch_size) and seed the
// RandomState seed (neox_args.seed, default 1234). The steps are:
//
//  1. epochs = smallest e with (e*tpe-1)/L >= numSamples, tpe = sum(sizes);
//  2. doc_idx = [0..D) tiled epochs times as int32, then rng.shuffle;
//  3. sample_idx: N = (epochs*tpe-1)/L samples of L+1 tokens each, the next
//     one starting on the previous one's last token;
//  4. shuffle_idx = arange(N, uint32), then rng.shuffle (same rng).
//
// Document positions and offsets are int32, like GPT-NeoX's int32 path of
// helpers.build_sample_idx; N >= 2^32-2 (where GPT-NeoX switches to an
// int64 shuffle_idx) is rejected.
func BuildNeoXIndex(sizes []int32, seqLen int, numSamples int64, seed uint32) (*Index, error) {
	tpe, epochs, n, err := numEpochs(sizes, seqLen, numSamples)
	if err != nil {
		return nil, err
	}
	rng := NewMT19937(seed)

	// _build_doc_idx.
	docIdx := make([]int32, epochs*int64(len(sizes)))
	for k := range docIdx {
		docIdx[k] = int32(k % len(sizes))
	}
	rng.ShuffleInt32(docIdx)

	sampleIdx := buildSampleIdx(sizes, docIdx, seqLen, n)

	// _build_shuffle_idx.
	shuffleIdx := make([]uint32, n)
	for k := range shuffleIdx {
		shuffleIdx[k] = uint32(k)
	}
	rng.ShuffleUint32(shuffleIdx)

	return &Index{
		Order:          OrderNeoX,
		SeqLen:         seqLen,
		NumSamples:     numSamples,
		Seed:           seed,
		TokensPerEpoch: tpe,
		Epochs:         int(epochs),
		DocIdx:         docIdx,
		SampleIdx:      sampleIdx,
		ShuffleIdx:     shuffleIdx,
	}, nil
}
