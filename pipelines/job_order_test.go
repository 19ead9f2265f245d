package pipelines

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gptkit/shards"
)

// TestChangedFromLongReorder: a rerun over a finished dataset of many inputs given in
// another order (a glob on another node: two files swapped among 2000) names where the
// order first differs, in a line, not every input's name twice (a screenful).
func TestChangedFromLongReorder(t *testing.T) {
	d := &jobDesc{Version: pipelineVersion, Name: "ds", Tokenizer: "fp", EOD: 0, DType: "uint16", TextKey: "text", AppendEOD: true, ShardBytes: 1 << 20}
	var inputs []jobInput
	for i := range 2000 {
		inputs = append(inputs, jobInput{Name: fmt.Sprintf("shard-%04d.jsonl", i), Size: 100, SHA256: "ab"})
	}
	old := &jobDesc{}
	*old = *d
	old.Splits = []jobSplit{{Inputs: inputs}}
	now := slices.Clone(inputs)
	now[1500], now[1501] = now[1501], now[1500]
	d.Splits = []jobSplit{{Inputs: now}}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "tok", Fingerprint: "fp"}, shards.Uint16,
		map[string]any{"job_settings": old.settings(), "job_inputs": old.inputList()})
	got, err := d.changedFrom(m, "tok", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 400 || !strings.Contains(got, "another order") || !strings.Contains(got, "shard-1500.jsonl") || !strings.Contains(got, "shard-1501.jsonl") {
		t.Fatalf("changedFrom (%d bytes) = %.600q...\nwant a line saying the order differs first at input 1501 (shard-1500.jsonl, now shard-1501.jsonl)", len(got), got)
	}
}

// TestChangesManyInputs: a killed run (or task) rerun with its 2000 inputs sorted
// otherwise, or all touched, says why it starts over (or is refused) in a line: the
// first inputs that changed and how many more, not one entry per input.
func TestChangesManyInputs(t *testing.T) {
	var a, b []jobInput
	for i := range 2000 {
		a = append(a, jobInput{Name: fmt.Sprintf("shard-%04d.jsonl", i), Size: 100, ModTime: "t1"})
		b = append(b, jobInput{Name: fmt.Sprintf("shard-%04d.jsonl", 1999-i), Size: 100, ModTime: "t2"})
	}
	got := (&jobDesc{Splits: []jobSplit{{Inputs: a}}}).changes(&jobDesc{Splits: []jobSplit{{Inputs: b}}})
	if len(got) > 1000 || !strings.Contains(got, "input 1 named shard-1999.jsonl, was shard-0000.jsonl") || !strings.Contains(got, "more") {
		t.Fatalf("changes (%d bytes) = %.600q...\nwant the first changes and how many more", len(got), got)
	}
}
