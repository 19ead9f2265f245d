package tokenize

import (
	"encoding/base64"
	"fmt"
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
	"<|endoftext|><|endoftext|>", "<|padding|>", "<|endoftext", "<|endoftext|>_x", "<|endoftext|>.\nx", "a  's", "                         x",
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

// TestCharStartsStraddling checks the bounds of bpe_chars.go where they decide: for
// characters whose own merges reach a rank at or above that of a token joining one of
// their proper parts with the bytes beside them, the piece made of that token's bytes
// and the character, merged by mergeRanksMedium and by mergeRanksShort.
func TestCharStartsStraddling(t *testing.T) {
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		ct := tok.charTab()
		// The token of lowest rank by two bytes, for each of charTables' four bounds.
		type kind struct {
			name  string
			min   []uint32
			key   func(tk string) (uint16, bool)
			piece func(tk, c string) string
		}
		kinds := []kind{
			{"suf2", ct.suf2, func(tk string) (uint16, bool) {
				n := len(tk)
				return uint16(tk[n-2]) | uint16(tk[n-1])<<8, n >= 2
			}, func(tk, c string) string { return tk[:len(tk)-1] + c }},
			{"suf2Long", ct.suf2Long, func(tk string) (uint16, bool) {
				n := len(tk)
				return uint16(tk[max(n-2, 0)]) | uint16(tk[n-1])<<8, n >= 3 && tk[n-3] < 0xC0
			}, func(tk, c string) string { return tk[:len(tk)-2] + c }},
			{"pre2", ct.pre2, func(tk string) (uint16, bool) {
				return uint16(tk[0]) | uint16(tk[min(1, len(tk)-1)])<<8, len(tk) >= 2
			}, func(tk, c string) string { return c + tk[1:] }},
			{"pre2Long", ct.pre2Long, func(tk string) (uint16, bool) {
				return uint16(tk[0]) | uint16(tk[min(1, len(tk)-1)])<<8, len(tk) >= 3 && tk[2]&0xC0 != 0x80
			}, func(tk, c string) string { return c + tk[2:] }},
		}
		st := tok.getState()
		for _, k := range kinds {
			argmin := make(map[uint16]int) // the token's id
			for id, tk := range tok.vocab.strings() {
				if len(tk) < 2 {
					continue
				}
				if key, ok := k.key(tk); ok && uint32(id) == k.min[key] {
					argmin[key] = id
				}
			}
			checked := 0
			for cp := rune(0x80); cp < 0x10000 && checked < 1000; cp++ {
				if cp >= 0xD800 && cp < 0xE000 {
					continue
				}
				c := string(cp)
				v := tok.charInfo(ct, c, cp)
				if v&charMerges == 0 {
					continue
				}
				var key uint16
				switch k.name {
				case "suf2", "suf2Long":
					key = uint16(c[0]) | uint16(c[1])<<8 // suf2: its first byte after the token's last but one
				case "pre2", "pre2Long":
					key = uint16(c[len(c)-2]) | uint16(c[len(c)-1])<<8
				}
				for _, id := range argmin {
					tk := tok.vocab.at(id)
					var fits bool
					switch k.name {
					case "suf2":
						fits = tk[len(tk)-1] == c[0]
					case "suf2Long":
						fits = len(c) == 3 && uint16(tk[len(tk)-2])|uint16(tk[len(tk)-1])<<8 == key
					case "pre2":
						fits = tk[0] == c[len(c)-1]
					case "pre2Long":
						fits = len(c) == 3 && uint16(tk[0])|uint16(tk[1])<<8 == key
					}
					if !fits || uint32(id) > uint32(v>>charMShift&idMask) {
						continue
					}
					p := k.piece(tk, c)
					if len(p) <= rankMediumMinLen {
						p += " " + p // medium length, the same neighbours
					}
					want := slices.Clone(tok.mergeRanksShort(st, p))
					if got := tok.mergeRanksMedium(st, p); !slices.Equal(got, want) {
						t.Fatalf("%s, %s bound: mergeRanksMedium(%q) = %v, mergeRanksShort %v", name, k.name, p, got, want)
					}
					checked++
					break
				}
			}
			t.Logf("%s: %s: %d pieces", name, k.name, checked)
		}
		tok.putState(st)
	}
}

// TestCharStartsWholeChar: rank files (tiktoken's format, cl100k_base's pattern) where a
// token that holds a whole character and a neighbour ranks below that character's own
// merges. Starting from the character there would make that pair before the bytes' run
// does; charStarts must start from bytes, and the ids must be tiktoken's (the reference's).
func TestCharStartsWholeChar(t *testing.T) {
	for _, c := range []struct {
		extra []string // tokens ranked 256, 257, ... after the 256 bytes
		text  string
		want  []int
	}{
		{[]string{"b\xC3\xA9", "ab", "é"}, "xxxxxabé", []int{120, 120, 120, 120, 120, 257, 258}},
		{[]string{"\xE4\xB8", "中z", "zy", "中"}, "中zywwww", []int{259, 258, 119, 119, 119, 119}},
	} {
		var file strings.Builder
		for b := range 256 {
			fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
		}
		for k, tok := range c.extra {
			fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), 256+k)
		}
		tok, err := LoadTiktoken([]byte(file.String()), "cl100k_base")
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: Encode = %v, want %v (tiktoken's)", c.text, got, c.want)
		}
		if got := tok.refEncode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: refEncode = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestCharStartsRandomVocab: mergeRanksMedium against mergeRanksShort under random rank
// files, whose tokens are any pieces of the texts' characters (whole characters, their
// byte pairs, across two characters) in random rank order, unlike a trained
// vocabulary's, where the proof of bpe_chars.go has nothing to lean on.
func TestCharStartsRandomVocab(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	chars := []string{"é", "中", "国", "a", "b", " ", "ж", "日", "\xe4\xb8", "，"}
	for range 150 {
		var text strings.Builder
		for text.Len() < 40 {
			text.WriteString(chars[rng.Intn(len(chars))])
		}
		sample := text.String()
		// Tokens: substrings of the sample of 2-7 bytes, in random order.
		seen := map[string]bool{}
		var extra []string
		for range 60 {
			i := rng.Intn(len(sample) - 1)
			j := min(len(sample), i+2+rng.Intn(6))
			if s := sample[i:j]; !seen[s] {
				seen[s] = true
				extra = append(extra, s)
			}
		}
		var file strings.Builder
		for b := range 256 {
			fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
		}
		for k, tok := range extra {
			fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), 256+k)
		}
		tok, err := LoadTiktoken([]byte(file.String()), "cl100k_base")
		if err != nil {
			t.Fatal(err)
		}
		st := tok.getState()
		for range 40 {
			i := rng.Intn(len(sample))
			p := sample[i:min(len(sample), i+9+rng.Intn(30))]
			want := slices.Clone(tok.mergeRanksShort(st, p))
			if got := tok.mergeRanksMedium(st, p); !slices.Equal(got, want) {
				t.Fatalf("tokens %q: mergeRanksMedium(%q) = %v, mergeRanksShort %v", extra, p, got, want)
			}
		}
		tok.putState(st)
	}
}
