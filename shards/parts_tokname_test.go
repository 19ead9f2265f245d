package shards

import (
	"context"
	"testing"
)

// TestMergePartsTokenizerNamedOtherwise: parts tokenized with one tokenizer (its
// fingerprint, eod and size) recorded under other names (a copy of gpt2's files given
// as --tokenizer DIR, named by the directory before abdef03 and "gpt2" after, or by
// other directory names on other machines) merge, as datasets do; they were refused
// as "tokenized with gpt2 ..., part 0 with my-gpt2-copy ..." of the same fingerprint.
func TestMergePartsTokenizerNamedOtherwise(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writePart(t, st, "ds", 0, 2, "job-1", map[string][][]int{"": {{1, 2}}})
	m := writePart(t, st, "ds", 1, 2, "job-1", map[string][][]int{"": {{3}}})
	m.Tokenizer.Name = "my-copy"
	if err := WriteManifest(ctx, st, join("ds", PartDir(1, 2)), m); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeParts(ctx, st, "ds", MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
}
