package tokenize

import (
	"slices"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
)

// TestEncodeBatchLargeTexts: EncodeBatch cuts a large text into parts encoded on several
// workers and gives Encode's ids for every text, under every kind of tokenizer; a large
// text that cannot be cut (one line) is one job.
func TestEncodeBatchLargeTexts(t *testing.T) {
	shakespeare := string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))
	var golden []string
	for _, d := range readGolden(t, "gpt2") {
		golden = append(golden, d.Text)
	}
	large := shakespeare + strings.Join(golden, "\n") + "\n" + strings.ReplaceAll(shakespeare, "\n", "\r\n")
	oneLine := strings.ReplaceAll(shakespeare, "\n", " ")
	texts := []string{"small text\n", large, "", oneLine, large[:2*batchSplitMin-1], "another\n"}
	toks := []*Tokenizer{
		sharedTokenizer(t, "gpt2"), sharedTokenizer(t, "neox-20b"),
		sharedTokenizer(t, "cl100k_base"), sharedTokenizer(t, "o200k_base"),
		NewCharsFromText(large+oneLine, "chars"), NewNeoXChar(),
	}
	workerCounts := []int{2, 3}
	if raceEnabled {
		toks, workerCounts = toks[:1], workerCounts[:1]
	}
	for _, tok := range toks {
		want := make([][]int, len(texts))
		for i, s := range texts {
			want[i] = tok.Encode(s)
		}
		jobs, parts := tok.batchJobs(texts, 2)
		if parts == nil || len(parts[1]) < 2 || parts[3] != nil && tok.kind == KindBPE {
			t.Fatalf("%s: jobs %d: the large text not cut into parts, or the line cut", tok.Name(), len(jobs))
		}
		for _, w := range workerCounts {
			got := tok.EncodeBatch(texts, w)
			for i := range texts {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("%s, %d workers: text %d (%d bytes): EncodeBatch differs from Encode", tok.Name(), w, i, len(texts[i]))
				}
			}
		}
	}
}
