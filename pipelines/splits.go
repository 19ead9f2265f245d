package pipelines

import (
	"fmt"

	"gptkit/shards"
)

// TrainSplit is the training split's name. Its shards, like an unsplit dataset's, are
// NAME_text_document*, as GPT-NeoX's preprocess_data.py names them.
const TrainSplit = "train"

// SplitInputs are the inputs of one split of a dataset.
type SplitInputs struct {
	// Split names the split: TrainSplit ("" means it too) for the training data, else
	// e.g. "val" or "test". It is recorded in the manifest's shard entries
	// (shards.ShardInfo.Split) and names the shards: NAME_text_document* for the training
	// split, NAME_SPLIT_text_document* for the others.
	Split  string
	Inputs []string // JSONL and .txt files, in order (see TokenizeRun.Inputs)
}

// splits returns the job's splits: Splits, with "" named TrainSplit, or Inputs as the
// one unnamed split (whose manifest entries have no split).
func (r *TokenizeRun) splits() []SplitInputs {
	if len(r.Splits) == 0 {
		return []SplitInputs{{Inputs: r.Inputs}}
	}
	out := make([]SplitInputs, len(r.Splits))
	for i, s := range r.Splits {
		out[i] = SplitInputs{Split: trainName(s.Split), Inputs: s.Inputs}
	}
	return out
}

// checkSplits reports Splits that cannot be written side by side: an invalid or repeated
// name (the unnamed and the train split share their shard names), a split without
// inputs, or Inputs given as well.
func (r *TokenizeRun) checkSplits() error {
	if len(r.Splits) == 0 {
		return nil
	}
	if len(r.Inputs) > 0 {
		return fmt.Errorf("both Inputs and Splits are set: put every input in a split")
	}
	seen := map[string]bool{}
	for _, s := range r.Splits {
		if err := shards.CheckSplitName(s.Split); err != nil {
			return err
		}
		name := trainName(s.Split)
		if seen[name] {
			return fmt.Errorf("split %q appears twice (the unnamed split is the %q split)", s.Split, TrainSplit)
		}
		seen[name] = true
		if len(s.Inputs) == 0 {
			return fmt.Errorf("split %q has no inputs", s.Split)
		}
	}
	return nil
}

// trainName maps "" to TrainSplit, for comparing split names.
func trainName(split string) string {
	if split == "" {
		return TrainSplit
	}
	return split
}

// ShardPrefix names shard k (from 0) of a dataset's split: for the training data (split
// "" or "train") NAME_text_document, NAME_text_document_001, ...; for another split, e.g.
// "val", NAME_val_text_document, NAME_val_text_document_001, ...
func ShardPrefix(name, split string, k int) string {
	base := name + "_text_document"
	if trainName(split) != TrainSplit {
		base = name + "_" + split + "_text_document"
	}
	if k == 0 {
		return base
	}
	return fmt.Sprintf("%s_%03d", base, k)
}
