package tokenize

import (
	"fmt"
	"slices"
	"testing"
)

// TestGoldenIDs checks every line of the golden files: the ids HF tokenizers 0.23.2 and
// tiktoken give for the public parity corpus.
func TestGoldenIDs(t *testing.T) {
	for _, tc := range []struct{ tokenizer, golden string }{
		{"gpt2", "gpt2"},
		{"gpt2-files", "gpt2"},
		{"neox-20b", "neox-20b"},
		{"cl100k_base", "cl100k_base"},
		{"o200k_base", "o200k_base"},
	} {
		t.Run(tc.tokenizer, func(t *testing.T) {
			tok := sharedTokenizer(t, tc.tokenizer)
			docs := readGolden(t, tc.golden)
			bad := 0
			for i, d := range docs {
				got := tok.Encode(d.Text)
				if !slices.Equal(got, d.IDs) {
					bad++
					if bad <= 5 {
						t.Errorf("line %d: %s", i+1, firstDiff(tok, d.Text, got, d.IDs))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d lines differ", bad, len(docs))
			}
		})
	}
}

// firstDiff describes where two id sequences first differ, with the tokens around it.
func firstDiff(tok *Tokenizer, text string, got, want []int) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	show := func(ids []int) string {
		hi := min(len(ids), i+4)
		s := ""
		for _, id := range ids[lo:hi] {
			s += fmt.Sprintf("%d%q ", id, tok.TokenBytes(id))
		}
		return s
	}
	return fmt.Sprintf("first difference at token %d (len got %d want %d)\n  got:  %s\n  want: %s\n  text: %.200q", i, len(got), len(want), show(got), show(want), text)
}
