package tokenize

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCut: encoding the two parts of a text cut where Cut says gives the ids of the
// whole, for every tokenizer and every cut Cut finds in texts full of newlines (and of
// Windows line ends, which Cut also cuts after).
func TestCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	alphabet := append(append([]string{}, splitAlphabet...), "\n", "\nA", "\n7", "\n/x", "\n\n", "\r\nA", "x\r\nb", ".\r\n9", " \r\nA", "\r\r\nA", "<|endoftext|>", "<|padding|>", "\u00c5", "A\u030a")
	var texts []string
	for range 60 {
		n := 1 + rng.IntN(400)
		var b []byte
		for len(b) < n {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		texts = append(texts, string(b))
	}
	for _, d := range readGolden(t, "gpt2")[:200] {
		texts = append(texts, d.Text)
	}
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		cuts := 0
		for _, s := range texts {
			whole := tok.Encode(s)
			for p := tok.Cut(s, 0, len(s)); p >= 0; p = tok.Cut(s, p+1, len(s)) {
				cuts++
				if got := append(tok.Encode(s[:p]), tok.Encode(s[p:])...); !slices.Equal(got, whole) {
					t.Fatalf("%s: cut at %d of %q: %s", name, p, s, firstDiff(tok, s, got, whole))
				}
			}
		}
		if cuts < 100 {
			t.Errorf("%s: only %d cuts found", name, cuts)
		}
	}
	crlf := "First line.\r\nSecond line\r\n2 more\r\n"
	for name, want := range map[string]int{"gpt2": len("First line.\r"), "neox-20b": len("First line.\r"), "cl100k_base": len("First line.\r\n"), "o200k_base": len("First line.\r\n")} {
		if p := sharedTokenizer(t, name).Cut(crlf, 1, len(crlf)); p != want {
			t.Errorf("%s: Cut of CRLF text = %d, want %d", name, p, want)
		}
	}
	char := NewNeoXChar()
	if p := char.Cut("abc", 1, 3); p != 1 {
		t.Errorf("neox-char: Cut = %d, want 1", p)
	}
}

// FuzzCut: at every cut Cut finds, encoding the two parts gives the ids of the whole,
// under every named tokenizer (both pre-tokenizer families: GPT-2's pattern, the tiktoken ones).
func FuzzCut(f *testing.F) {
	for _, s := range []string{"a\nb", "x.\r\nA", "x\r\nb\r\n7", " \r\nA\n\nz", "word\r\r\nA", "Å\r\n9", "a<|endoftext|>\r\nb"} {
		f.Add(s)
	}
	toks := []*Tokenizer{sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b"), sharedTokenizer(f, "cl100k_base"), sharedTokenizer(f, "o200k_base")}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			whole := tok.Encode(s)
			for p := tok.Cut(s, 0, len(s)); p >= 0; p = tok.Cut(s, p+1, len(s)) {
				if got := append(tok.Encode(s[:p]), tok.Encode(s[p:])...); !slices.Equal(got, whole) {
					t.Fatalf("%s: cut at %d of %q: %s", tok.Name(), p, s, firstDiff(tok, s, got, whole))
				}
			}
		}
	})
}
