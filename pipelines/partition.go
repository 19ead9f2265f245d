package pipelines

import (
	"math/bits"
	"sort"

	"gptkit/prep"
)

// partitionVersion changes whenever Partition would cut the same inputs differently: parts
// of another version are not resumed, and do not merge with this version's.
const partitionVersion = 1

// SplitRanges are what one part of a partitioned run reads of one split: byte ranges of
// uncompressed JSONL files and whole other files, in input order.
type SplitRanges struct {
	Split  string           `json:"split"` // as in the manifest's shard entries ("" for an unsplit run)
	Ranges []prep.FileRange `json:"ranges"`
}

// Partition cuts the inputs of a run into w slices of about equal bytes, one per worker
// of a partitioned run, and returns each slice as the ranges it reads of every split
// (all splits, in order, some perhaps without ranges). It is a function of the input
// names, their sizes (size, by name) and w only, so that every worker of an array job
// computes the same cut without talking to the others.
//
// The inputs, split after split, are laid end to end, T bytes in all; worker k owns the
// bytes [⌊kT/w⌋, ⌊(k+1)T/w⌋). An uncompressed JSONL file (prep.Splittable) is cut at
// those bounds into byte ranges, each owning the lines that start in it (see
// prep.FileRange), so that a few large files spread evenly over many workers. Any other
// file (compressed JSONL, text, zip, Parquet) cannot be cut: it goes whole to the worker
// that owns its middle byte, so with fewer such files than workers some workers get
// nothing (decompress .jsonl.zst files first to spread them). Every line of every input
// is read by exactly one worker, and the slices, taken in worker order, read the inputs
// in their order: the parts' documents, concatenated split by split in part order, are
// the documents of a single-process run.
func Partition(splits []SplitInputs, size func(name string) int64, w int) [][]SplitRanges {
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
	out := make([][]SplitRanges, w)
	for k := range out {
		out[k] = make([]SplitRanges, len(splits))
		for i, s := range splits {
			out[k][i].Split = s.Split
		}
	}
	var pos uint64
	for i, s := range splits {
		for _, in := range s.Inputs {
			n := uint64(max(size(in), 0))
			if !prep.Splittable(in) || n == 0 {
				k := owner(pos + n/2)
				out[k][i].Ranges = append(out[k][i].Ranges, prep.Whole(in))
				pos += n
				continue
			}
			for k := owner(pos); k < w && bounds[k] < pos+n; k++ {
				lo, hi := max(pos, bounds[k]), min(pos+n, bounds[k+1])
				if lo >= hi {
					continue
				}
				rg := prep.FileRange{File: in, Start: int64(lo - pos), End: int64(hi - pos)}
				if lo == pos && hi == pos+n {
					rg = prep.Whole(in)
				}
				out[k][i].Ranges = append(out[k][i].Ranges, rg)
			}
			pos += n
		}
	}
	return out
}

// sliceBytes is the bytes a slice reads: its ranges' lengths and its whole files' sizes.
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
