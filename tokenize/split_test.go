package tokenize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// splitPatterns are the pre-tokenizers and the regexes they must equal.
var splitPatterns = []struct {
	name  string
	split splitter
	regex func(s string, ends []int) []int
}{
	{"gpt2", splitGPT2, refSplitGPT2},
	{"cl100k_base", splitCL100K, cl100kPattern.split},
	{"o200k_base", splitO200K, o200kPattern.split},
}

// splitInSteps is splitAll with ends of capacity room at each call: the splitter
// stops early and is called again from the last end, as encodeSegment does when its
// batch fills.
func splitInSteps(split splitter, s string, room int) []int {
	var w classWindow
	w.reset(s)
	var out []int
	for from := 0; from < len(s); {
		ends := split(&w, s, from, make([]int, 0, room))
		if len(ends) == 0 {
			break
		}
		out = append(out, ends...)
		from = ends[len(ends)-1]
	}
	return out
}

// checkSplit fails t unless every splitter, called with several batch sizes, gives the
// pieces its regex gives on s (valid UTF-8).
func checkSplit(t *testing.T, s string) {
	t.Helper()
	for _, p := range splitPatterns {
		want := p.regex(s, nil)
		for _, room := range []int{1, 3, 65, 70, 200, pieceBatch} {
			if got := splitInSteps(p.split, s, room); !slices.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s, batches of %d, on %d bytes: piece %d differs: got %q, regex %q\ntext %.300q",
					p.name, room, len(s), i, splitPieces(s, got)[i:min(i+3, len(got))], splitPieces(s, want)[i:min(i+3, len(want))], s)
			}
		}
	}
}

// splitAlphabet holds what the scanners treat specially: contractions in both cases,
// every kind of whitespace (ASCII, U+0020 runs, multi-byte), \r\n, letters and digits
// of several byte lengths, marks, punctuation.
var splitAlphabet = []string{
	"a", "Z", "word", " the", "7", "123456", "'", "'s", "'S", "'ll", "'LL", "'re", "'ve", "'d", "'m", "'t", "'ſ",
	" ", "  ", "    ", "\t", "\n", "\r\n", "\r", "\n\n", "\v", "\f", "\u00a0", "\u3000", "\u2028", "\u0085", "\u1680",
	".", ",", "!?", "$", "(", "/", "--", "é", "É", "ß", "日本", "한", "ж", "Ж", "ǅ", "\u0301", "٣", "𝟘", "Ⅻ",
	"😀", "\U0001F600", "\u200b", "ʰ", "\u1c89", "\u1c8a",
}

// splitASCII is splitAlphabet's ASCII part, weighted towards English: blocks of it go
// through the block splitters (multi-byte characters send cl100k's a piece at a time).
var splitASCII = func() []string {
	var out []string
	for _, a := range splitAlphabet {
		if a[0] < 0x80 {
			out = append(out, a)
		}
	}
	return append(out, " the", " of", " and", "ing", ".\n", ", ", " a", "\n\n", "  ", "0", "42")
}()

// randomSplitText returns at least n bytes of splitAlphabet, or (half the time) of
// splitASCII with one of the others now and then.
func randomSplitText(rng *rand.Rand, n int) string {
	ascii := rng.IntN(2) == 0
	var sb strings.Builder
	for sb.Len() < n {
		if ascii && rng.IntN(50) != 0 {
			sb.WriteString(splitASCII[rng.IntN(len(splitASCII))])
		} else {
			sb.WriteString(splitAlphabet[rng.IntN(len(splitAlphabet))])
		}
	}
	return sb.String()
}

// TestSplittersMatchRegex: on random texts of the alphabet above, of lengths around
// the block (64) and window (16 KiB) sizes, and on the golden texts, each splitter
// equals its regex.
func TestSplittersMatchRegex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 1000 {
		n := 1 + rng.IntN(300)
		if iter%50 == 0 {
			n = windowBlocks*64 + rng.IntN(3000)
		}
		t.Run(fmt.Sprint(iter), func(t *testing.T) { checkSplit(t, randomSplitText(rng, n)) })
	}
	for _, s := range tricky {
		checkSplit(t, ReplaceInvalidUTF8(s))
	}
	// What a block hands to the next (contractions, groups of numbers, NL taken by a
	// run of "other", a letter's prefix): each snippet across the first block boundary.
	for _, snippet := range []string{".\n\n x", ".\r\n\r\n", "123456789", "'ll x", "'s", " .\n", "\n  \n x",
		"  x", "\t.y", "x.y", "don't", "  \n", "...\n\n\n\n\n", "\n \n \n", "1 2", "\u00a0\u00a0x",
		".\n\n \n x", ".\n\n\n\n \n x"} {
		for off := 50; off <= 66; off++ {
			checkSplit(t, strings.Repeat("a", off)+snippet+" tail")
			checkSplit(t, strings.Repeat(" ", off)+snippet)
		}
	}
	if !testing.Short() {
		for _, d := range readGolden(t, "gpt2") {
			checkSplit(t, d.Text)
		}
	}
}

// FuzzSplitMatchesRegex: each pre-tokenizer equals its regex on any input, whatever
// its batch size.
func FuzzSplitMatchesRegex(f *testing.F) {
	addTrickySeeds(f)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		f.Add(randomSplitText(rng, 1+rng.IntN(200)))
	}
	f.Fuzz(func(t *testing.T, s string) { checkSplit(t, ReplaceInvalidUTF8(s)) })
}
