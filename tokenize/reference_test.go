package tokenize

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// tricky are inputs that exercise the pre-tokenizer rules and BPE corners.
var tricky = []string{
	"", " ", "  ", "a", " a", "  a", "a  b", "a \tb", "\n\nfoo", "  foo", "\u00a0\u00a0x",
	"IT'S", "it's", "it''s", " 's", "'s", "'ll've're", "x'", "'", "''", "don’t",
	"\r\n", "a\r\nb", "   \n  x", "x   ", "\t\t", "\u3000x", "\u2028y", "\u0085z",
	"123 4567 89", " 3.14159", "１２３", "e\u0301", "<|endoftext|>", "x<|endoftext|> y",
	"<|endoftext|><|endoftext|>", "<|padding|>", "<|endoftext", "a  's", "                         x",
	"                          x", "😀😀 😀", "\x00\x01\x7f", "\U0001e5d0 \U00016100", "ſ's 'S 'ſ",
	strings.Repeat("a", 3000), strings.Repeat(" ", 700) + "b", strings.Repeat("ab1!", 500),
	strings.Repeat("\u00e9", 400), "\xff\xfe bad \xe2\x82 utf8 \xed\xa0\x80",
}

func TestSplitGPT2MatchesRegex(t *testing.T) {
	inputs := append([]string{}, tricky...)
	for _, d := range readGolden(t, "gpt2") {
		inputs = append(inputs, d.Text)
	}
	for _, s := range inputs {
		s = ReplaceInvalidUTF8(s)
		got, want := splitAll(splitGPT2, new(classWindow), s, nil), refSplitGPT2(s, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("splitGPT2(%.80q):\n got  %v\n want %v", s, splitPieces(s, got), splitPieces(s, want))
		}
	}
}

func splitPieces(s string, ends []int) []string {
	var out []string
	prev := 0
	for _, e := range ends {
		out = append(out, s[prev:e])
		prev = e
	}
	return out
}

func TestEncodeMatchesReference(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		t.Run(name, func(t *testing.T) {
			tok := sharedTokenizer(t, name)
			inputs := append([]string{}, tricky...)
			docs := readGolden(t, "gpt2")
			step := 1
			if testing.Short() || strings.HasSuffix(name, "_base") {
				step = 25 // the reference is slow; a sample suffices there
			}
			for i := 0; i < len(docs); i += step {
				inputs = append(inputs, docs[i].Text)
			}
			for _, s := range inputs {
				if got, want := tok.Encode(s), tok.refEncode(s); !slices.Equal(got, want) {
					t.Fatalf("Encode(%.80q): %s", s, firstDiff(tok, s, got, want))
				}
			}
		})
	}
}

// TestLongPieces checks the long-piece merge loops (bucket queue and heap) against the
// short one on random long pieces of few distinct characters, where merges overlap a lot.
func TestLongPieces(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		st := tok.getState()
		for n := 0; n < 200; n++ {
			alphabet := []string{"a", "b", "e", "th", "in", "er"}[:1+rng.Intn(6)]
			var b strings.Builder
			for b.Len() < 300+rng.Intn(3000) {
				b.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
			p := b.String()
			want := slices.Clone(tok.mergeSmall(st, p))
			if got := tok.mergeLong(st, p); !slices.Equal(got, want) {
				t.Fatalf("%s: mergeLong(%.40q...) differs from mergeShort", name, p)
			}
			if got := tok.mergeLongHeap(st, p); !slices.Equal(got, want) {
				t.Fatalf("%s: mergeLongHeap(%.40q...) differs from mergeShort", name, p)
			}
		}
	}
}

// TestMergeRanksMedium checks mergeRanksMedium against mergeRanksShort (tiktoken's loop,
// rescanning every rank, from bytes) on pieces of 1-600 bytes: few distinct characters
// (equal ranks side by side, where the leftmost must merge first), CJK and other
// scripts (which it starts from characters: bpe_chars.go), characters beside bytes and
// spaces that make tokens with their parts, digits and random bytes.
func TestMergeRanksMedium(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	alphabets := [][]string{
		{"a", "b", "e", "th", "in", "er"},
		{"a"}, {"ab"}, {" "}, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
		strings.Split("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", ""),
		strings.Split("абвгдежзийклмнопрстуфхцчшщыэюя", ""),
		// Characters beside bytes that make tokens with their parts, and broken UTF-8.
		{"中", "国", "的", "是", "。", "，", " ", "  ", "a", "1", "é", "ж", "\xe5", "\xb8", "\xe4\xb8", "\n", "日本", "한", "ー", "「"},
	}
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		st := tok.getState()
		for range 4000 {
			n := 1 + rng.Intn(600)
			var b strings.Builder
			if rng.Intn(8) == 0 {
				for b.Len() < n {
					b.WriteByte(byte(rng.Intn(256)))
				}
			} else {
				alphabet := alphabets[rng.Intn(len(alphabets))]
				alphabet = alphabet[:1+rng.Intn(len(alphabet))]
				for b.Len() < n {
					b.WriteString(alphabet[rng.Intn(len(alphabet))])
				}
			}
			p := b.String()
			want := slices.Clone(tok.mergeRanksShort(st, p))
			if got := tok.mergeRanksMedium(st, p); !slices.Equal(got, want) {
				t.Fatalf("%s: mergeRanksMedium(%q) = %v, mergeRanksShort %v", name, p, got, want)
			}
		}
		tok.putState(st)
	}
}
