package loader

import (
	"errors"
	"fmt"
	"math"
)

// NeoXBlendWeights reproduces GPT-NeoX's
// data_utils.get_normalized_weights_and_num_samples: the weights divided by
// their sum, and the number of samples to build for each dataset,
// ceil(numSamples*w*1.005). The sum is taken left to right, as Python's
// sum() does up to Python 3.11 (3.12 compensates rounding, which can change
// the last bit for some weight lists).
func NeoXBlendWeights(weights []float64, numSamples int64) (normalized []float64, perDataset []int64, err error) {
	if len(weights) == 0 {
		return nil, nil, errors.New("loader: no blend weights")
	}
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	if err := checkWeightSum(weights, sum); err != nil {
		return nil, nil, err
	}
	normalized = make([]float64, len(weights))
	perDataset = make([]int64, len(weights))
	for i, w := range weights {
		normalized[i] = w / sum
		perDataset[i] = int64(math.Ceil(float64(numSamples) * normalized[i] * 1.005))
	}
	return normalized, perDataset, nil
}

// BlendNeoX reproduces GPT-NeoX's BlendableDataset index: the weights are
// normalised again as numpy does (w / np.sum(w)), then helpers.cpp
// build_blending_indices assigns blended sample k to the dataset d with the
// largest w_d*max(k,1) - used_d (the first one wins ties) and to that
// dataset's sample used_d. size is the blended length, which GPT-NeoX sets to
// the sum of the datasets' lengths. At most 255 datasets, like GPT-NeoX.
func BlendNeoX(weights []float64, size int64) (datasetIndex []uint8, sampleIndex []int64, err error) {
	if len(weights) == 0 || len(weights) >= 255 {
		return nil, nil, fmt.Errorf("loader: %d blend weights, want 1..254", len(weights))
	}
	if size < 0 {
		return nil, nil, fmt.Errorf("loader: negative blend size %d", size)
	}
	sum := numpySum(weights)
	if err := checkWeightSum(weights, sum); err != nil {
		return nil, nil, err
	}
	w := make([]float64, len(weights))
	for i, v := range weights {
		w[i] = v / sum
	}
	used := make([]int64, len(w))
	datasetIndex = make([]uint8, size)
	sampleIndex = make([]int64, size)
	for k := int64(0); k < size; k++ {
		kd := max(float64(k), 1.0)
		best := 0
		// float64(...) forbids fusing into an FMA, matching the C++ build.
		bestErr := float64(w[0]*kd) - float64(used[0])
		for d := 1; d < len(w); d++ {
			if e := float64(w[d]*kd) - float64(used[d]); e > bestErr {
				bestErr, best = e, d
			}
		}
		datasetIndex[k] = uint8(best)
		sampleIndex[k] = used[best]
		used[best]++
	}
	return datasetIndex, sampleIndex, nil
}

// checkWeightSum refuses weights whose sum is not a positive finite number: all zero, or
// so large that adding them overflows float64 (1e308:a,1e308:b), which would otherwise
// normalize every weight to 0.
func checkWeightSum(weights []float64, sum float64) error {
	switch {
	case math.IsInf(sum, 0) || math.IsNaN(sum):
		return fmt.Errorf("loader: blend weights %v add up to more than a float64 holds: scale them down (only their ratios matter, e.g. 0.5:dirA,0.5:dirB)", weights)
	case !(sum > 0):
		return fmt.Errorf("loader: blend weights %v sum to %v: give every dataset a positive weight", weights, sum)
	}
	return nil
}

// numpySum is np.sum over a contiguous float64 array: 0.0 plus numpy's
// pairwise summation (8 accumulators up to 128 elements, halving above).
func numpySum(a []float64) float64 {
	return 0.0 + pairwiseSum(a)
}

func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := 0; j < 8; j++ {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}
