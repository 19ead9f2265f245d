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
				if !slices.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
					t.Fatalf("%s, %d workers: text %d (%d bytes): EncodeBatch differs from Encode", tok.Name(), w, i, len(texts[i]))
				}
			}
		}
	}
}

// TestEncodeBatchCharNoneKnown: a text cut into parts whose characters a character
// vocabulary lacks gives Encode's nil, not an empty slice; one with some known gives
// Encode's ids.
func TestEncodeBatchCharNoneKnown(t *testing.T) {
	defer func(min, max int) { batchSplitMin, batchPartMax = min, max }(batchSplitMin, batchPartMax)
	batchSplitMin, batchPartMax = 2, 8
	tok := NewCharsFromText("abc", "abc")
	texts := []string{strings.Repeat("xyz\n", 40), strings.Repeat("é", 80), strings.Repeat("xaz\n", 40)}
	if _, parts := tok.batchJobs(texts, 2); parts == nil || len(parts[0]) < 2 || len(parts[1]) < 2 {
		t.Fatalf("the texts are not cut into parts")
	}
	got := tok.EncodeBatch(texts, 2)
	for i, s := range texts {
		want := tok.Encode(s)
		if !slices.Equal(got[i], want) || (got[i] == nil) != (want == nil) {
			t.Errorf("text %d (%.12q...): EncodeBatch %#v, Encode %#v", i, s, got[i], want)
		}
	}
}

// FuzzEncodeBatchParts: with parts of a few bytes, EncodeBatch gives Encode's ids for
// texts of many lines (the input repeated with its lines in other orders), every text
// cut wherever Cut allows, under the four named BPE tokenizers.
func FuzzEncodeBatchParts(f *testing.F) {
	for _, s := range []string{"a\nb", "x.\r\nA", "x\r\nb\r\n7", " \r\nA\n\nz", "Å\r\n9", "a<|endoftext|>\nb", "word\nWord\n1\n"} {
		f.Add(s)
	}
	defer func(min, max int) { batchSplitMin, batchPartMax = min, max }(batchSplitMin, batchPartMax)
	batchSplitMin, batchPartMax = 2, 8
	toks := []*Tokenizer{sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b"), sharedTokenizer(f, "cl100k_base"), sharedTokenizer(f, "o200k_base")}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.SplitAfter(s, "\n")
		slices.Reverse(lines)
		texts := []string{s, strings.Repeat(s+"\n", 5), strings.Join(lines, "") + s, "x"}
		for _, tok := range toks {
			got := tok.EncodeBatch(texts, 3)
			for i, text := range texts {
				if want := tok.Encode(text); !slices.Equal(got[i], want) {
					t.Fatalf("%s: text %d (%q): EncodeBatch %v, Encode %v", tok.Name(), i, text, got[i], want)
				}
			}
		}
	})
}
