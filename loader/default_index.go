package loader

import (
	"math/bits"
	"math/rand/v2"
)

// defaultStream is the second half of the PCG seed of OrderDefault ("gptkit" in
// ASCII), so that OrderDefault's stream differs from other PCG users' seed.
const defaultStream = 0x6770746b6974

// BuildDefaultIndex builds gptkit's own order (OrderDefault) for a split whose
// documents have the given token counts. It has the same layout, epoch count and
// packing as BuildNeoXIndex, and differs in what is shuffled:
//
//  1. epochs and N as GPT-NeoX (the smallest e with (e*tpe-1)/L >= numSamples);
//  2. doc_idx is one permutation of the documents per epoch, back to back:
//     epoch e's block is [0..D) shuffled with Fisher-Yates;
//  3. sample_idx is GPT-NeoX's packing of that token stream (sample j is stream
//     tokens [j*L, j*L+L]);
//  4. shuffle_idx shuffles the samples within each epoch: the samples whose first
//     token lies in epoch e (j in [ceil(e*tpe/L), ceil((e+1)*tpe/L))) are shuffled
//     among themselves, in order of e.
//
// So a run reads every token of the split once per epoch before it reads any token
// a second time (GPT-NeoX shuffles all epochs' documents together, and all
// samples together), but for the sample of each epoch that runs on into the next:
// it reads up to L tokens of the next epoch's first document early. Len is N (GPT-NeoX drops the last one). The random
// numbers come from a PCG-DXSM generator (math/rand/v2's PCG, whose sequence is
// fixed) seeded with (seed, "gptkit"), drawn as Lemire's multiply-shift with
// rejection, so an index is the same on every machine and Go release. It costs
// two passes over the arrays, like GPT-NeoX's.
func BuildDefaultIndex(sizes []int32, seqLen int, numSamples int64, seed uint32) (*Index, error) {
	tpe, epochs, n, err := numEpochs(sizes, seqLen, numSamples)
	if err != nil {
		return nil, err
	}
	rng := rand.NewPCG(uint64(seed), defaultStream)
	D := int64(len(sizes))
	docIdx := make([]int32, epochs*D)
	for e := int64(0); e < epochs; e++ {
		block := docIdx[e*D : (e+1)*D]
		for k := range block {
			block[k] = int32(k)
		}
		shuffleBlock(rng, block)
	}
	sampleIdx := buildSampleIdx(sizes, docIdx, seqLen, n)
	shuffleIdx := make([]uint32, n)
	for k := range shuffleIdx {
		shuffleIdx[k] = uint32(k)
	}
	L := int64(seqLen)
	for e := int64(0); e < epochs; e++ {
		lo := min((e*tpe+L-1)/L, n)
		hi := min(((e+1)*tpe+L-1)/L, n)
		shuffleBlock(rng, shuffleIdx[lo:hi])
	}
	return &Index{
		Order:          OrderDefault,
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

// shuffleBlock is Fisher-Yates from the top: for i = n-1 down to 1, swap a[i] with
// a[j], j uniform in [0, i] by Lemire's multiply-shift with rejection.
func shuffleBlock[T any](rng *rand.PCG, a []T) {
	for i := len(a) - 1; i > 0; i-- {
		j := boundedPCG(rng, uint64(i)+1)
		a[i], a[j] = a[j], a[i]
	}
}

// boundedPCG returns a uniform value in [0, n), n > 0 (Lemire 2019).
func boundedPCG(rng *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(rng.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(rng.Uint64(), n)
		}
	}
	return hi
}
