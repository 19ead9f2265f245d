package shards

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// stripedParts builds part manifests from shard specs: "name" for a shard without
// stripe, "name@input:stripe" for one stripe of an input.
func stripedParts(specs ...[]string) []*Manifest {
	parts := make([]*Manifest, len(specs))
	for i, shards := range specs {
		m := &Manifest{Part: &PartInfo{Index: i, Count: len(specs), Splits: []string{""}}}
		for _, spec := range shards {
			info := ShardInfo{Prefix: spec}
			var in int
			var b int64
			if name, at, ok := strings.Cut(spec, "@"); ok {
				fmt.Sscanf(at, "%d:%d", &in, &b)
				info.Prefix = name
				info.Stripe = &StripeInfo{Input: in, File: fmt.Sprintf("f%d.jsonl.zst", in), Stripe: b}
			}
			m.Shards = append(m.Shards, info)
		}
		parts[i] = m
	}
	return parts
}

// TestSplitOrderStripes: the shards of an input shared by stripes are listed by stripe
// (a stripe's several shards in their order), everything else part by part; stripes of
// one input in parts that are not consecutive, or one stripe in two parts, are refused.
func TestSplitOrderStripes(t *testing.T) {
	order := func(parts []*Manifest) string {
		list, err := splitOrder("ds", parts, "")
		if err != nil {
			return "error: " + err.Error()
		}
		var out []string
		for _, ps := range list {
			out = append(out, fmt.Sprintf("%d/%s", ps.part, ps.info.Prefix))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name  string
		parts []*Manifest
		want  string
	}{
		{"no stripes", stripedParts([]string{"a", "b"}, nil, []string{"c"}), "0/a 0/b 2/c"},
		{"three parts share input 1",
			stripedParts([]string{"a", "s0@1:0", "s3@1:3"}, []string{"t1@1:1", "t1b@1:1", "t4@1:4"}, []string{"u2@1:2", "v", "w@2:0"}, []string{"x@2:1"}),
			"0/a 0/s0 1/t1 1/t1b 2/u2 0/s3 1/t4 2/v 2/w 3/x"},
		{"a part with no stripe of its input", stripedParts([]string{"s0@0:0", "s2@0:2"}, nil, []string{"u1@0:1"}), "0/s0 2/u1 0/s2"},
		{"one input twice in a row", stripedParts([]string{"s0@0:0"}, []string{"t1@0:1", "r0@1:0"}, []string{"u1@1:1"}), "0/s0 1/t1 1/r0 2/u1"},
		{"not consecutive", stripedParts([]string{"s0@0:0"}, []string{"b"}, []string{"u1@0:1"}), "error: shards: merge-parts ds: shards: incompatible datasets: split \"\": the stripes of input 0 (f0.jsonl.zst) are in parts that are not consecutive"},
		{"one stripe twice", stripedParts([]string{"s0@0:0", "s1@0:1"}, []string{"t1@0:1"}), "stripe 1 of input 0 (f0.jsonl.zst) is in parts/part-00000-of-00002 and in parts/part-00001-of-00002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := order(tc.parts); !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	_, err := splitOrder("ds", stripedParts([]string{"s0@0:0"}, []string{"b"}, []string{"u1@0:1"}), "")
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("not consecutive: %v does not match ErrIncompatible", err)
	}
}
