package tokenize

import (
	"runtime"
	"runtime/debug"
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
		jobs, cuts := tok.batchJobs(texts, 2)
		if cuts == nil || cuts[1] == nil || len(cuts[1].parts) < 2 || cuts[3] != nil && tok.kind == KindBPE {
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

// TestEncodeBatchOneArray: a text cut into parts is encoded into one array, not into
// the parts' own slices and then copied into the result (twice Encode's heap): with the
// collector off (the pool keeps the encode states), EncodeBatch on 2 workers allocates
// under 1.5 × the ids' bytes.
func TestEncodeBatchOneArray(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops encode states at random: new ones are allocated")
	}
	tok := sharedTokenizer(t, "gpt2")
	text := strings.Repeat(string(testfiles.Read(t, "corpora/tinyshakespeare.txt")), 3)
	if _, cuts := tok.batchJobs([]string{text}, 2); cuts == nil || len(cuts[0].parts) < 3 {
		t.Fatalf("the text is not cut into 3 parts or more")
	}
	tok.EncodeBatch([]string{text}, 2) // the encode states and their caches
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ids := tok.EncodeBatch([]string{text}, 2)[0]
	runtime.ReadMemStats(&after)
	if heap, idBytes := after.TotalAlloc-before.TotalAlloc, uint64(8*len(ids)); heap > idBytes*3/2 {
		t.Errorf("EncodeBatch allocated %d bytes for %d bytes of ids (%.2f×)", heap, idBytes, float64(heap)/float64(idBytes))
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
	if _, cuts := tok.batchJobs(texts, 2); cuts == nil || cuts[0] == nil || cuts[1] == nil || len(cuts[0].parts) < 2 || len(cuts[1].parts) < 2 {
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

// TestEncodeBatchByteCharInvalid: under the byte vocabulary, parts whose invalid UTF-8
// becomes more ids than bytes (U+FFFD, three) overflow their regions (an id a byte):
// the text's ids outgrow its array, or one part overflows into new memory; EncodeBatch
// still gives Encode's ids.
func TestEncodeBatchByteCharInvalid(t *testing.T) {
	defer func(min, max int) { batchSplitMin, batchPartMax = min, max }(batchSplitMin, batchPartMax)
	batchSplitMin, batchPartMax = 64, 256
	tok := NewNeoXChar()
	valid := strings.Repeat("é\n", 300)
	texts := []string{strings.Repeat("ab\xff\xfe", 400), valid + strings.Repeat("\x80", 600), valid + strings.Repeat("\x80", 20) + valid, "x"}
	if _, cuts := tok.batchJobs(texts, 2); cuts == nil || cuts[0] == nil || cuts[1] == nil || cuts[2] == nil {
		t.Fatalf("the texts are not cut into parts")
	}
	got := tok.EncodeBatch(texts, 2)
	for i, s := range texts {
		if want := tok.Encode(s); !slices.Equal(got[i], want) {
			t.Errorf("text %d (%.12q...): EncodeBatch gives %d ids, Encode %d", i, s, len(got[i]), len(want))
		}
	}
}

// FuzzEncodeBatchParts: with parts of a few bytes, EncodeBatch gives Encode's ids for
// texts of many lines (the input repeated with its lines in other orders), every text
// cut wherever Cut allows, under the four named BPE tokenizers; with the parts' regions
// sized as EncodeBatch sizes them, at the sampled rate with no room to spare and below
// it (parts overflow their regions, parts after them have their place after their
// region's start), and at one id each (the ids outgrow the array).
func FuzzEncodeBatchParts(f *testing.F) {
	for _, s := range []string{"a\nb", "x.\r\nA", "x\r\nb\r\n7", " \r\nA\n\nz", "Å\r\n9", "a<|endoftext|>\nb", "word\nWord\n1\n"} {
		f.Add(s)
	}
	defer func(min, max int, slack float64, extra int) {
		batchSplitMin, batchPartMax, batchSlack, batchRegionExtra = min, max, slack, extra
	}(batchSplitMin, batchPartMax, batchSlack, batchRegionExtra)
	batchSplitMin, batchPartMax = 2, 8
	regions := []struct {
		slack float64
		extra int
	}{{batchSlack, batchRegionExtra}, {1, 0}, {0.8, 0}, {0, 0}}
	toks := []*Tokenizer{sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b"), sharedTokenizer(f, "cl100k_base"), sharedTokenizer(f, "o200k_base")}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2048 {
			// Parts of 8 bytes at most: a longer input only takes longer (0.5 s for
			// 5 KB, and the fuzzer stalled on such inputs).
			return
		}
		lines := strings.SplitAfter(s, "\n")
		slices.Reverse(lines)
		texts := []string{s, strings.Repeat(s+"\n", 5), strings.Join(lines, "") + s, "x"}
		for _, tok := range toks {
			for _, r := range regions {
				batchSlack, batchRegionExtra = r.slack, r.extra
				got := tok.EncodeBatch(texts, 3)
				for i, text := range texts {
					if want := tok.Encode(text); !slices.Equal(got[i], want) || (got[i] == nil) != (want == nil) {
						t.Fatalf("%s, regions %v: text %d (%q): EncodeBatch %v, Encode %v", tok.Name(), r, i, text, got[i], want)
					}
				}
			}
		}
	})
}
