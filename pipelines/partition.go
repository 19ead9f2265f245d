package pipelines

import (
	"math/bits"
	"sort"

	"gptkit/prep"
)

// partitionVersion changes whenever Partition would cut the same inputs differently: parts
// of another version are not resumed, and do not merge with this version's. Sharing
// compressed files by stripes did not change it: the cut of inputs that have none is
// the same, and the job of a run whose inputs have some now records the stripe size
// (jobDesc.StripeBytes), so that parts cut before are not resumed or merged.
const partitionVersion = 1

// DefaultStripeBytes is the stripe size of a partitioned run: the uncompressed stream of
// a compressed JSONL file that several parts share is cut into stripes of this many
// bytes, dealt out to them in turn (see Partition). It is part of the run's job, so
// that all the tasks and the merge agree on it.
const DefaultStripeBytes = 64 << 20

// SplitRanges are what one part of a partitioned run reads of one split: byte ranges of
// uncompressed JSONL files, stripes of compressed JSONL files and whole other files, in
// input order.
type SplitRanges struct {
	Split  string           `json:"split"` // as in the manifest's shard entries ("" for an unsplit run)
	Ranges []prep.FileRange `json:"ranges"`
	// Inputs holds, for each range, the index of its file among the split's inputs.
	Inputs []int `json:"inputs,omitempty"`
}

// sharedByStripes reports whether Partition may share file among several workers by
// stripes: a compressed JSONL file (an uncompressed one is cut into byte ranges).
func sharedByStripes(file string) bool {
	return prep.Stripable(file) && !prep.Splittable(file)
}

// Partition cuts the inputs of a run into w slices of about equal bytes, one per worker
// of a partitioned run, and returns each slice as the ranges it reads of every split
// (all splits, in order, some perhaps without ranges). It is a function of the input
// names, their sizes (size, by name), w and stripeBytes (0: DefaultStripeBytes) only,
// so that every worker of an array job computes the same cut without talking to the
// others.
//
// The inputs, split after split, are laid end to end, T bytes in all; worker k owns the
// bytes [⌊kT/w⌋, ⌊(k+1)T/w⌋), and its middle byte is the middle of those. Then:
//
//   - An uncompressed JSONL file (prep.Splittable) is cut at those bounds into byte
//     ranges, each owning the lines that start in it (see prep.FileRange), so that a
//     few large files spread evenly over many workers.
//   - A compressed JSONL file (.jsonl.zst, .jsonl.gz, .json.gz) that holds the middle
//     bytes of k ≥ 2 workers is shared by those k workers by stripes: each decompresses
//     all of it, and worker j of them (in worker order, from 0) reads the lines that
//     start in the stripes b of stripeBytes bytes of its uncompressed stream with
//     b mod k == j (prep.Striped). A file of n bytes gets ⌊nw/T⌋ or ⌈nw/T⌉ such
//     workers, so that files of more bytes get more workers, and each worker tokenizes
//     about n/k of them. The Pile's 30 files over 64 workers: 2 or 3 workers each.
//   - Any other file (text, zip, Parquet, and a compressed JSONL file that holds the
//     middle byte of fewer than 2 workers) goes whole to the worker that owns its
//     middle byte. With only such files, and fewer of them than workers, some workers
//     get nothing.
//
// Every line of every input is read by exactly one worker. The slices, taken in worker
// order, read the inputs in their order, except that the k workers of a shared file
// are consecutive and nothing else of the split lies between their stripes of it:
// the parts' documents, concatenated split by split in part order, with the documents
// of a shared file taken stripe by stripe, are the documents of a single-process run
// (shards.MergeParts puts them so). With no file shared, the cut is the one partition
// version 1 made.
func Partition(splits []SplitInputs, size func(name string) int64, w int, stripeBytes int64) [][]SplitRanges {
	if stripeBytes <= 0 {
		stripeBytes = DefaultStripeBytes
	}
	var total uint64
	for _, s := range splits {
		for _, in := range s.Inputs {
			total += uint64(max(size(in), 0))
		}
	}
	bounds := make([]uint64, w+1) // bounds[k] = ⌊kT/w⌋, in 128 bits: k·T overflows 64
	for k := range bounds {
		hi, lo := bits.Mul64(uint64(k), total)
		bounds[k], _ = bits.Div64(hi, lo, uint64(w))
	}
	// owner is the worker whose bytes hold position p (the last one for p = T).
	owner := func(p uint64) int {
		k := sort.Search(w, func(k int) bool { return bounds[k+1] > p })
		return min(k, w-1)
	}
	// middle is worker k's middle byte; ok is false for a worker that owns no bytes.
	middle := func(k int) (p uint64, ok bool) {
		return bounds[k] + (bounds[k+1]-bounds[k])/2, bounds[k] < bounds[k+1]
	}
	// middles lists the workers whose middle byte is in [lo, hi), in order (middles
	// increase with k).
	middles := func(lo, hi uint64) []int {
		var ks []int
		for k := sort.Search(w, func(k int) bool { p, _ := middle(k); return p >= lo }); k < w; k++ {
			p, ok := middle(k)
			if p >= hi {
				break
			}
			if ok {
				ks = append(ks, k)
			}
		}
		return ks
	}
	out := make([][]SplitRanges, w)
	for k := range out {
		out[k] = make([]SplitRanges, len(splits))
		for i, s := range splits {
			out[k][i].Split = s.Split
		}
	}
	add := func(k, split, input int, rg prep.FileRange) {
		sr := &out[k][split]
		sr.Ranges = append(sr.Ranges, rg)
		sr.Inputs = append(sr.Inputs, input)
	}
	var pos uint64
	for i, s := range splits {
		for x, in := range s.Inputs {
			n := uint64(max(size(in), 0))
			switch {
			case n == 0:
				add(owner(pos), i, x, prep.Whole(in))
			case prep.Splittable(in):
				for k := owner(pos); k < w && bounds[k] < pos+n; k++ {
					lo, hi := max(pos, bounds[k]), min(pos+n, bounds[k+1])
					if lo >= hi {
						continue
					}
					rg := prep.FileRange{File: in, Start: int64(lo - pos), End: int64(hi - pos)}
					if lo == pos && hi == pos+n {
						rg = prep.Whole(in)
					}
					add(k, i, x, rg)
				}
			default:
				if ks := middles(pos, pos+n); len(ks) >= 2 && sharedByStripes(in) {
					for j, k := range ks {
						add(k, i, x, prep.Striped(in, stripeBytes, len(ks), j))
					}
				} else {
					add(owner(pos+n/2), i, x, prep.Whole(in))
				}
			}
			pos += n
		}
	}
	return out
}

// stripesShared reports whether Partition may share an input of splits by stripes,
// whatever the number of workers: whether a partitioned run's job depends on the stripe
// size.
func stripesShared(splits []SplitInputs) bool {
	for _, s := range splits {
		for _, in := range s.Inputs {
			if sharedByStripes(in) {
				return true
			}
		}
	}
	return false
}

// sliceBytes is the bytes a slice reads: its ranges' lengths and its whole files' sizes
// (a striped file reads all of its bytes).
func sliceBytes(slice []SplitRanges, size func(name string) int64) int64 {
	var n int64
	for _, s := range slice {
		for _, rg := range s.Ranges {
			if rg.IsWhole() {
				n += max(size(rg.File), 0)
			} else {
				n += min(rg.End, size(rg.File)) - rg.Start
			}
		}
	}
	return n
}
