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

// TestLongCacheGate: the long-piece cache closes after a window of lookups in which
// fewer than one in longCacheMinHitsIn hit (pieces that do not come back: clauses of
// CJK-like text), stays closed for longCacheOff long pieces without growing, then opens
// again; pieces that come back keep it open. The ids are the reference encoder's
// throughout.
func TestLongCacheGate(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	rng := rand.New(rand.NewPCG(9, 10))
	han := []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持音跑投")
	clause := func() string {
		var sb strings.Builder
		for sb.Len() < 40 {
			sb.WriteRune(han[rng.IntN(len(han))])
		}
		return sb.String()
	}
	st := newEncodeState() // not a pooled one: its gate would be where other tests left it
	check := func(p string) {
		t.Helper()
		if got, want := encodeLong[int](tok, st, p, nil), tok.refEncode(p); !slices.Equal(got, want) {
			t.Fatalf("%q: ids %v, the reference's %v", p, got, want)
		}
	}
	// Pieces that come back (a few hundred, round and round): the cache stays open.
	var again []string
	for range 300 {
		again = append(again, clause())
	}
	for i := range 3 * longCacheWindow {
		check(again[i%len(again)])
	}
	if st.longOff != 0 {
		t.Fatalf("closed (%d pieces to go) on pieces that come back", st.longOff)
	}
	// Pieces that do not come back: closed after a window in which they miss.
	st.longLookups, st.longHits = 0, 0
	for range longCacheWindow - 1 {
		check(clause())
	}
	if st.longOff != 0 || st.longLookups != longCacheWindow-1 {
		t.Fatalf("closed (%d to go, %d lookups) before its window's end", st.longOff, st.longLookups)
	}
	check(clause())
	if st.longOff != longCacheOff {
		t.Fatalf("longOff %d after a window of misses, want %d", st.longOff, longCacheOff)
	}
	n := len(st.long)
	for range 1000 {
		check(clause())
	}
	if len(st.long) != n || st.longOff != longCacheOff-1000 {
		t.Fatalf("closed: the cache went from %d to %d pieces, longOff %d", n, len(st.long), st.longOff)
	}
	// Open again when the pieces to go have gone by.
	st.longOff = 1
	check(clause())
	check(again[0])
	if st.longOff != 0 || st.longLookups != 1 {
		t.Fatalf("not open again: longOff %d, lookups %d", st.longOff, st.longLookups)
	}
}
