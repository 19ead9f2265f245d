package shards

import "slices"

// TrainSplit is the split of shards whose manifest entry names none.
const TrainSplit = "train"

// shardSplit is the split shard s belongs to: its manifest Split, "train" when empty.
func (d *Dataset) shardSplit(s int) string {
	if split := d.Manifest.Shards[s].Split; split != "" {
		return split
	}
	return TrainSplit
}

// Splits lists the splits of d's shards in manifest order, "train" for shards that
// name none.
func (d *Dataset) Splits() []string {
	var splits []string
	for s := range d.shards {
		if split := d.shardSplit(s); !slices.Contains(splits, split) {
			splits = append(splits, split)
		}
	}
	return splits
}

// SplitShards returns the indices of the shards of split ("train" also takes the
// shards that name no split), in manifest order.
func (d *Dataset) SplitShards(split string) []int {
	var out []int
	for s := range d.shards {
		if d.shardSplit(s) == split {
			out = append(out, s)
		}
	}
	return out
}

// SplitTokens is the number of tokens in split's shards.
func (d *Dataset) SplitTokens(split string) int64 {
	var n int64
	for _, s := range d.SplitShards(split) {
		n += d.shards[s].NumTokens()
	}
	return n
}
