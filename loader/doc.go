// Package loader will hold gptkit's training-data loader: it turns tokenized
// shards into the stream of fixed-length samples a training step consumes.
//
// This first part reproduces GPT-NeoX's sample order exactly, so that a run
// can move between GPT-NeoX and gptkit with the same seed and see the same
// samples in the same order:
//
//   - [MT19937] is numpy's legacy np.random.RandomState(seed) generator, with
//     its shuffle (RandomState.shuffle on a 1-D array).
//   - [BuildNeoXIndex] builds GPT2Dataset's doc_idx, sample_idx and
//     shuffle_idx (pack_impl "packed"), and [NeoXIndex.Sample] /
//     [NeoXIndex.AppendSpans] resolve a sample to document token ranges.
//   - [NeoXBlendWeights] and [BlendNeoX] reproduce the weighted blending of
//     several datasets (data_utils.get_normalized_weights_and_num_samples,
//     BlendableDataset and helpers.cpp build_blending_indices).
//
// The reference implementation is GPT-NeoX megatron/data/gpt2_dataset.py,
// blendable_dataset.py, data_utils.py and helpers.cpp; testdata/make_golden.py
// regenerates the golden files the tests compare against with real numpy.
package loader
