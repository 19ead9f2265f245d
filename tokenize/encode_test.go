package tokenize

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestReadable: the hot loop may read past a segment's end only within the text the
// segment is part of.
func TestReadable(t *testing.T) {
	host := strings.Repeat("abcdefgh", 8)
	st := &encodeState{host: host}
	for _, tc := range []struct {
		s    string
		want int
	}{
		{host, len(host)},
		{host[3:10], len(host) - 3},
		{host[60:], 4},
		{host[64:], 0},
		{strings.Clone(host[3:10]), 7}, // not within host
		{"", 0},
	} {
		if got := st.readable(tc.s); got != tc.want {
			t.Errorf("readable(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	st.host = ""
	if got := st.readable(host[3:10]); got != 7 {
		t.Errorf("readable without a host = %d, want 7", got)
	}
}

// TestSegmentsSplitInTheirText: texts that added tokens cut into many segments (NeoX's
// space runs, the specials of GPT-2 and cl100k_base) encode as the reference does, now
// that encodeSegment splits each segment within the window of the whole text: segments
// that start and end mid-block, after a letter, digit, space, apostrophe or non-ASCII
// character, and texts longer than a window.
func TestSegmentsSplitInTheirText(t *testing.T) {
	frags := []string{"<|endoftext|>", "<|fim_prefix|>", "  ", "   ", "    ", "\t", "\n", "\r\n", " ",
		"word", "Word", "x", "123", "4567", "'s", "'ll", "'", "é", "日本", "€", ".", "!!", "\u00a0", "\u3000", "𝔸"}
	rng := rand.New(rand.NewPCG(7, 8))
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(frags[rng.IntN(len(frags))])
		}
		return sb.String()
	}
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base"} {
		tok := sharedTokenizer(t, name)
		sizes := []int{1, 5, 20, 63, 64, 65, 200, 1000, 3000}
		if name != "cl100k_base" {
			sizes = append(sizes, 20000, 40000)
		}
		for _, n := range sizes {
			for range 4 {
				s := text(n)
				if got, want := tok.Encode(s), tok.refEncode(s); !slices.Equal(got, want) {
					t.Fatalf("%s: Encode(%.80q): %s", name, s, firstDiff(tok, s, got, want))
				}
			}
		}
	}
}

// TestAddedAfterASCIIPrefix: an added token after a long ASCII prefix (which validUTF8
// scans for the added tokens' first byte in the same pass) is found at every offset
// around the 128-byte steps of that scan.
func TestAddedAfterASCIIPrefix(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base"} {
		tok := sharedTokenizer(t, name)
		for _, n := range []int{0, 1, 120, 127, 128, 129, 255, 256, 257, 383, 384, 1000} {
			prefix := strings.Repeat("abc def ", n/8+1)[:n]
			for _, s := range []string{prefix + "<|endoftext|>", prefix + "<|endoftext|> x <|endoftext|>" + prefix, prefix + "<" + prefix + "<|endoftext|>"} {
				if got, want := tok.Encode(s), tok.refEncode(s); !slices.Equal(got, want) {
					t.Fatalf("%s: Encode(%.80q): %s", name, s, firstDiff(tok, s, got, want))
				}
			}
		}
	}
}
