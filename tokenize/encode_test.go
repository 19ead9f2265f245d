package tokenize

import (
	"fmt"
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

// TestLongCacheGate: the long-piece cache is not judged while it fills; then it closes
// after a window of lookups in which fewer than one in longCacheMinHitsIn hit (pieces
// that do not come back: clauses of CJK-like text), stays closed, neither probed nor
// filled, for longCacheOffMin bytes of text, twice as many after each further window
// that fails, then opens again; pieces that come back keep it open, and a window that
// passes sets the time off back. The ids are the reference encoder's throughout.
func TestLongCacheGate(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	rng := rand.New(rand.NewPCG(9, 10))
	han := []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持音跑投")
	seen := map[string]bool{}
	// clause returns a piece not returned before: 6-8 characters (18-24 bytes, a long
	// piece of a few ids). The cache fills its arena and is emptied on the way, in
	// closeIt's loop below (after a window has failed: it stays judged).
	clause := func() string {
		for {
			var sb strings.Builder
			for range 6 + rng.IntN(3) {
				sb.WriteRune(han[rng.IntN(len(han))])
			}
			if s := sb.String(); !seen[s] {
				seen[s] = true
				return s
			}
		}
	}
	st := newEncodeState() // not a pooled one: its gate would be where other tests left it
	check := func(p string) {
		t.Helper()
		if got, want := encodeLongWhole[int](tok, st, p, nil), tok.refEncode(p); !slices.Equal(got, want) {
			t.Fatalf("%q: ids %v, the reference's %v", p, got, want)
		}
	}
	// off is how many bytes of text are to go by before the cache is open again.
	off := func() int { return max(0, st.longOpenAt-st.textSeen) }
	gate := func() string {
		return fmt.Sprintf("%d pieces in the cache, window %d lookups/%d hits, %d bytes to go by, backoff %d",
			len(st.long), st.longLookups, st.longHits, off(), st.longBackoff)
	}

	// A cache still filling is not judged: a first pass over pieces that will come back
	// misses, as pieces that never come back do.
	var known []string
	for range longCacheWarm {
		known = append(known, clause())
		check(known[len(known)-1])
	}
	if off() != 0 || st.longLookups != 0 || len(st.long) != longCacheWarm {
		t.Fatalf("after a first pass of %d pieces: %s", longCacheWarm, gate())
	}
	if len(st.longArena) >= longCacheMaxIDs/2 {
		t.Fatalf("the first pass's pieces fill %d ids of the arena, half of it or more: shorter clauses", len(st.longArena))
	}
	// Pieces that come back: the cache stays open.
	for i := range 2 * longCacheWindow {
		check(known[i%len(known)])
	}
	if off() != 0 || st.longLookups != 0 || st.longBackoff != 0 {
		t.Fatalf("on pieces that come back: %s", gate())
	}

	// window looks up hits pieces the cache holds and longCacheWindow-hits new ones,
	// shuffled together.
	window := func(hits int) {
		t.Helper()
		var ps []string
		for p := range st.long {
			if len(ps) == hits {
				break
			}
			ps = append(ps, p)
		}
		for len(ps) < longCacheWindow {
			ps = append(ps, clause())
		}
		rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		for _, p := range ps {
			check(p)
		}
	}
	need := longCacheWindow / longCacheMinHitsIn
	window(need)
	if off() != 0 || st.longBackoff != 0 {
		t.Fatalf("closed after a window of %d hits: %s", need, gate())
	}
	window(need - 1)
	if off() != longCacheOffMin || st.longBackoff != 2*longCacheOffMin {
		t.Fatalf("after a window of %d hits: %s, want %d to go by", need-1, gate(), longCacheOffMin)
	}
	// Closed: neither probed nor filled (encodeLongWhole does not count text: the text
	// around the pieces is not there).
	n := len(st.long)
	for range 1000 {
		check(clause())
	}
	check(known[0])
	if len(st.long) != n || st.longLookups != 0 || off() != longCacheOffMin {
		t.Fatalf("closed, after 1,001 pieces: %s (it held %d)", gate(), n)
	}
	st.textSeen = st.longOpenAt - 1
	check(known[0])
	if len(st.long) != n || st.longLookups != 0 {
		t.Fatalf("closed, a byte before it opens: %s (it held %d)", gate(), n)
	}
	// Open again when the bytes to go have gone by: it hits and fills.
	st.textSeen++
	check(clause())
	check(known[1])
	fresh := clause()
	check(fresh)
	if off() != 0 || st.longLookups != 3 || st.longHits != 1 || len(st.long) != n+2 {
		t.Fatalf("open again: %s (it held %d)", gate(), n)
	}
	if _, ok := st.long[fresh]; !ok {
		t.Fatalf("open again: %q not put in the cache", fresh)
	}
	// A second window in a row that fails closes it for twice as many bytes; one that
	// passes sets that back. closeIt looks up new pieces until the cache closes and says
	// for how many bytes.
	closeIt := func() int {
		t.Helper()
		for range 4 * longCacheWindow {
			if check(clause()); off() > 0 {
				return off()
			}
		}
		t.Fatalf("not closed by %d new pieces: %s", 4*longCacheWindow, gate())
		return 0
	}
	if n := closeIt(); n != 2*longCacheOffMin || st.longBackoff != 4*longCacheOffMin {
		t.Fatalf("after a second window of misses in a row: %s, want %d to go by", gate(), 2*longCacheOffMin)
	}
	for range 10 {
		st.textSeen = st.longOpenAt
		closeIt()
	}
	if off() != longCacheOffMax || st.longBackoff != longCacheOffMax {
		t.Fatalf("after many windows of misses: %s, want at most %d to go by", gate(), longCacheOffMax)
	}
	st.textSeen = st.longOpenAt
	window(need)
	if off() != 0 || st.longBackoff != 0 {
		t.Fatalf("after a window of %d hits: %s, want the backoff set back", need, gate())
	}
}

// TestLongCacheWarmsOnPeriodicText: long pieces that come back only after 8,000
// others (more than a window) come from the cache from the second pass on. (A gate that
// judged the cache while it was still filling closed it before the first came back.)
func TestLongCacheWarmsOnPeriodicText(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2-uncut")
	han := []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去")
	const period = 8000
	var ps []string
	for i := range period {
		// " 段落" and 4 letters from i: one piece of 19 bytes, each of period different.
		p := []rune(" 段落")
		for n := i; len(p) < 7; n /= len(han) {
			p = append(p, han[n%len(han)])
		}
		ps = append(ps, string(p))
	}
	st := newEncodeState()
	hits := 0
	for i := range 5 * period {
		p := ps[i%period]
		_, cached := st.long[p]
		open := st.textSeen+len(p)-st.longOpenAt >= 0
		got := encodeBPE[int](tok, st, p, 0, nil)
		if cached && open {
			hits++
		}
		if i%997 == 0 {
			if want := tok.refEncode(p); !slices.Equal(got, want) {
				t.Fatalf("%q: ids %v, the reference's %v", p, got, want)
			}
		}
	}
	if hits != 4*period || st.textSeen != 5*period*len(ps[0]) {
		t.Fatalf("%d of %d pieces came from the cache, want %d; %d bytes seen, want %d (open from byte %d, backoff %d)",
			hits, 5*period, 4*period, st.textSeen, 5*period*len(ps[0]), st.longOpenAt, st.longBackoff)
	}
}

// TestLongCacheReopensWithinText: one text whose long pieces first never come back,
// then come back: the cache closes on the first part and opens again within the same
// text (the time off is counted as the text's pieces are, not from its end).
func TestLongCacheReopensWithinText(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2-uncut")
	han := []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去")
	clause := func(i int) string { // 7 letters from i: a piece of 21 bytes
		var p []rune
		for n := i; len(p) < 7; n /= len(han) {
			p = append(p, han[n%len(han)])
		}
		return string(p)
	}
	var sb strings.Builder
	for i := range 12_000 {
		sb.WriteString(clause(i))
		sb.WriteString("，")
	}
	for i := range 40_000 {
		sb.WriteString(clause(1_000_000 + i%500))
		sb.WriteString("，")
	}
	st := newEncodeState()
	encodeBPE[int](tok, st, sb.String(), 0, nil)
	if st.longBackoff == 0 && st.longOpenAt == 0 {
		t.Fatalf("the cache never closed (%d pieces in it)", len(st.long))
	}
	for i := range 500 {
		if _, ok := st.long[clause(1_000_000+i)]; !ok {
			t.Fatalf("clause %d of those that come back is not in the cache: closed to the text's end? (%d bytes seen, open from %d, backoff %d)",
				i, st.textSeen, st.longOpenAt, st.longBackoff)
		}
	}
}
