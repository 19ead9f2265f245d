package loader

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gptkit/shards"
)

// ParseSplit parses a GPT-NeoX/Megatron split string such as "969,30,1" into the
// train, valid and test weights, as get_train_valid_test_split_ does: the parts are
// separated by "," (or "/"), a missing part is 0 and parts after the third are
// ignored. The weights are returned as written, not normalized (SplitRanges
// normalizes). A negative, non-finite or all-zero split is an error.
func ParseSplit(s string) ([3]float64, error) {
	var w [3]float64
	sep := ","
	if !strings.Contains(s, ",") && strings.Contains(s, "/") {
		sep = "/"
	}
	parts := strings.Split(s, sep)
	var sum float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return w, fmt.Errorf("split %q: part %q is not a non-negative number (want weights like 969,30,1)", s, p)
		}
		if i < 3 {
			w[i] = v
			sum += v
		}
	}
	if sum <= 0 {
		return w, fmt.Errorf("split %q: the weights add up to 0 (want weights like 969,30,1)", s)
	}
	return w, nil
}

// SplitRanges divides numDocs documents into the train, valid and test document
// ranges [start, end) exactly as Megatron/GPT-NeoX's get_train_valid_test_split_
// (megatron/data/data_utils.py):
//
//	splits = [w / sum(w) for w in weights]
//	splits_index = [0]
//	for i, split in enumerate(splits):
//	    splits_index.append(splits_index[i] + int(round(split * float(size))))
//	diff = splits_index[-1] - size
//	for i in range(1, len(splits_index)):
//	    splits_index[i] -= diff
//
// Python's round rounds halves to even (math.RoundToEven). The final
// adjustment shifts every boundary after the first by the rounding error, so
// the last range always ends at numDocs. Range k is [splits_index[k],
// splits_index[k+1]). The boundaries are clamped to [0, numDocs] (the formula
// keeps them there for valid weights; the clamp only guards bad input). All-zero
// weights give everything to train.
func SplitRanges(numDocs int, weights [3]float64) [3][2]int {
	sum := weights[0] + weights[1] + weights[2]
	if !(sum > 0) {
		return [3][2]int{{0, numDocs}, {numDocs, numDocs}, {numDocs, numDocs}}
	}
	var idx [4]int
	for i, w := range weights {
		idx[i+1] = idx[i] + int(math.RoundToEven(w/sum*float64(numDocs)))
	}
	diff := idx[3] - numDocs
	for i := 1; i < 4; i++ {
		idx[i] = min(max(idx[i]-diff, 0), numDocs)
	}
	return [3][2]int{{idx[0], idx[1]}, {idx[1], idx[2]}, {idx[2], idx[3]}}
}

// Split indexes: the order of Options.NumSamples and SplitDocuments' ranges.
const (
	Train = 0
	Valid = 1
	Test  = 2
)

// SplitNames are the splits' names, as index cache files and messages spell them.
var SplitNames = [3]string{"train", "valid", "test"}

// splitOfLabel maps a manifest's shard label to a split index; unknown labels (a
// "heldout-2" shard, say) belong to no split.
func splitOfLabel(label string) (int, bool) {
	switch label {
	case "", "train":
		return Train, true
	case "val", "valid", "validation":
		return Valid, true
	case "test":
		return Test, true
	}
	return 0, false
}

// SplitDocuments returns the global document ranges [start, end) of the train, valid
// and test splits of a dataset of numDocs documents whose manifest is m (nil for a
// bare shard). An unsplit dataset (no shard labeled other than "train": a corpus
// that has no val split, as prep pile-00 and prep custom write) is divided by split
// with SplitRanges, as GPT-NeoX divides a data_path. A dataset whose manifest labels
// some shard val, test or another split is already split, and split is not used
// (presplit reports that): train is
// the shards labeled "train" (or unlabeled), valid those labeled "val", "valid" or
// "validation", test those labeled "test"; each split's shards must be consecutive
// in the manifest (GPT-NeoX reads one document range per split), and a split with
// no shards is the empty range [numDocs, numDocs).
func SplitDocuments(m *shards.Manifest, numDocs int64, split [3]float64) (docs [3][2]int64, presplit bool, err error) {
	labeled := false
	if m != nil {
		for _, s := range m.Shards {
			if k, ok := splitOfLabel(s.Split); !ok || k != Train {
				labeled = true
			}
		}
	}
	if !labeled {
		r := SplitRanges(int(numDocs), split)
		for k := range r {
			docs[k] = [2]int64{int64(r[k][0]), int64(r[k][1])}
		}
		return docs, false, nil
	}
	for k := range docs {
		docs[k] = [2]int64{-1, -1}
	}
	var at int64
	for _, s := range m.Shards {
		if k, ok := splitOfLabel(s.Split); ok {
			switch r := &docs[k]; {
			case r[0] < 0:
				*r = [2]int64{at, at + s.Documents}
			case r[1] == at:
				r[1] += s.Documents
			default:
				return docs, true, fmt.Errorf("loader: its %s shards are not consecutive in the manifest (GPT-NeoX reads one document range per split): reorder the manifest's shards", SplitNames[k])
			}
		}
		at += s.Documents
	}
	for k := range docs {
		if docs[k][0] < 0 {
			docs[k] = [2]int64{numDocs, numDocs}
		}
	}
	return docs, true, nil
}

// TrainDocuments returns the global document range [start, end) of d's training
// data (see SplitDocuments); presplit reports a dataset whose manifest labels its
// shards, for which split is not used.
func TrainDocuments(d *shards.Dataset, split [3]float64) (docs [2]int64, presplit bool, err error) {
	all, presplit, err := SplitDocuments(d.Manifest, d.Len(), split)
	if err != nil {
		return docs, presplit, fmt.Errorf("dataset %s: %w", d.Dir, err)
	}
	if presplit && all[Train][0] == all[Train][1] {
		return docs, true, errors.New("dataset " + d.Dir + ": the manifest labels its shards but none is \"train\"")
	}
	return all[Train], presplit, nil
}
