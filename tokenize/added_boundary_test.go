package tokenize

import (
	"slices"
	"strings"
	"testing"
)

// TestAddedTokenThenText: the text after an added token is split as a text of its own
// (the patterns look at no byte before a match), wherever in a 64-byte block the token
// ends: cl100k_base's block rules once took the token's last byte (">", an "other") for
// the byte before, and split "<|endoftext|>_x" into "_", "x" within all-ASCII blocks.
// Every named tokenizer, each of its added tokens named here, followers of every class
// and at every offset in a block, against the reference encoder.
func TestAddedTokenThenText(t *testing.T) {
	added := map[string][]string{
		"gpt2":        {"<|endoftext|>"},
		"neox-20b":    {"<|endoftext|>", "<|padding|>"},
		"cl100k_base": {"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"},
		"o200k_base":  {"<|endoftext|>", "<|endofprompt|>"},
	}
	followers := []string{"_x", ".x", "$x", "'s", "'x", "x", " x", "  x", "\nx", "\r\nx", ".\n\nx", "\t x", "123x", "1234", "!!", "<x", "-\r\n", " ", ""}
	filler := strings.Repeat("ab cd, ef. ", 10)
	for name, specials := range added {
		t.Run(name, func(t *testing.T) {
			tok := sharedTokenizer(t, name)
			for _, sp := range specials {
				for _, f := range followers {
					for n := 0; n <= 70; n++ {
						s := filler[:n] + sp + f + " and the rest of it, in ASCII."
						if got, want := tok.Encode(s), tok.refEncode(s); !slices.Equal(got, want) {
							t.Fatalf("Encode(%q): %s", s, firstDiff(tok, s, got, want))
						}
					}
				}
			}
		})
	}
}
