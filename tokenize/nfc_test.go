package tokenize

import (
	"bufio"
	"compress/bzip2"
	"gptkit/internal/sharedtest"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

const ucdDir = "/usr/share/unicode"

func TestNFCExamples(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"hello, world", "hello, world"},
		{"e\u0301", "\u00e9"},
		{"caf\u0065\u0301!", "caf\u00e9!"},
		{"\u00e9", "\u00e9"},
		{"\u0301", "\u0301"},                         // a lone combining mark stays
		{" \u0301", " \u0301"},                       // U+0020 never composes
		{"\u2000\u2001", "\u2002\u2003"},             // en/em quad -> en/em space
		{"\u212b", "\u00c5"},                         // angstrom sign
		{"\u2126", "\u03a9"},                         // ohm sign
		{"\uf900", "\u8c48"},                         // CJK compatibility ideograph
		{"\U0002f800", "\u4e3d"},                     // CJK compatibility ideograph supplement
		{"\u0344", "\u0308\u0301"},                   // non-starter decomposition
		{"\u0958", "\u0915\u093c"},                   // composition exclusion
		{"a\u0323\u0307", "\u1ea1\u0307"},            // a + dot below, dot above
		{"a\u0307\u0323", "\u1ea1\u0307"},            // reordered first
		{"\u1e0a\u0323", "\u1e0c\u0307"},             // recomposed with the other mark
		{"q\u0307\u0323", "q\u0323\u0307"},           // reordered, nothing composes
		{"\u1100\u1161", "\uac00"},                   // Hangul L+V
		{"\u1100\u1161\u11a8", "\uac01"},             // Hangul L+V+T
		{"\uac00\u11a8", "\uac01"},                   // Hangul LV+T
		{"\uac01\u11a8", "\uac01\u11a8"},             // LVT takes no further T
		{"\u1100\u0301\u1161", "\u1100\u0301\u1161"}, // blocked
		{"Vie\u0302\u0323t", "Vi\u1ec7t"},            // Vietnamese
		{"\u0b47\u0b3e", "\u0b4b"},                   // starter + starter composition
		{"a\xffe\u0301", "a\xff\u00e9"},              // invalid bytes pass through
		{"\xff\u0301", "\xff\u0301"},
		{"e\xcc", "e\xcc"}, // truncated sequence
		// Code points newer than Unicode 9.0 are starters that never change.
		{"x\u0301\u1dfa", "x\u0301\u1dfa"}, // U+1DFA: Age 14.0, ccc 218 in 15.0
		{"a\u1dfa\u0301", "a\u1dfa\u0301"}, // it blocks the composition of a + acute
		{"x\u0898\u0316", "x\u0898\u0316"}, // U+0898: Age 14.0, ccc 230 in 15.0
		{"\U00011938", "\U00011938"},       // Age 13.0, decomposes in 15.0
		{"\U00011935\U00011930", "\U00011935\U00011930"},
		// Supplementary-plane starters (x/text/unicode/norm gets these wrong).
		{"\U00020041\u0301", "\U00020041\u0301"},
		{"\U00010413\u0301", "\U00010413\u0301"},
		{"\U00011fc6\u0345", "\U00011fc6\u0345"},
		{"\U00011099\U000110ba", "\U0001109a"}, // a real supplementary composition
	}
	for _, tt := range tests {
		if got := NFC(tt.in); got != tt.want {
			t.Errorf("NFC(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
		if got := nfcSlow(tt.in); got != tt.want {
			t.Errorf("nfcSlow(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
	}
}

// readAges returns, for each code point, whether it was assigned in Unicode 9.0 or earlier.
func readAges(t *testing.T) []bool {
	f, err := os.Open(ucdDir + "/DerivedAge.txt")
	if err != nil {
		skipNoUCD(t, err)
	}
	defer f.Close()
	old := make([]bool, utf8.MaxRune+1)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		cps, age, ok := strings.Cut(line, ";")
		if !ok {
			continue
		}
		major, _, _ := strings.Cut(strings.TrimSpace(age), ".")
		if n, err := strconv.Atoi(major); err != nil || n > 9 {
			continue
		}
		lo, hi, _ := strings.Cut(strings.TrimSpace(cps), "..")
		if hi == "" {
			hi = lo
		}
		for r := mustHex(t, lo); r <= mustHex(t, hi); r++ {
			old[r] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return old
}

func skipNoUCD(t testing.TB, err error) {
	t.Helper()
	sharedtest.Missing(t, "Unicode data (install Debian unicode-data): %v", err)
}

func mustHex(t *testing.T, s string) rune {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		t.Fatalf("bad code point %q", s)
	}
	return rune(v)
}

// TestNFCConformance runs the NormalizationTest.txt lines whose code points all
// date from Unicode 9.0 or earlier.
func TestNFCConformance(t *testing.T) {
	f, err := os.Open(ucdDir + "/NormalizationTest.txt.bz2")
	if err != nil {
		skipNoUCD(t, err)
	}
	defer f.Close()
	old := readAges(t)

	sc := bufio.NewScanner(bzip2.NewReader(f))
	tested, skipped := 0, 0
lines:
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line == "" || line[0] == '@' {
			continue
		}
		cols := strings.Split(line, ";")
		if len(cols) < 5 {
			t.Fatalf("line %d: %q", n, sc.Text())
		}
		var c [5]string
		for i := range c {
			var b strings.Builder
			for _, h := range strings.Fields(cols[i]) {
				r := mustHex(t, h)
				if !old[r] {
					skipped++
					continue lines
				}
				b.WriteRune(r)
			}
			c[i] = b.String()
		}
		tested++
		for i, want := range []string{c[1], c[1], c[1], c[3], c[3]} {
			if got := NFC(c[i]); got != want {
				t.Errorf("line %d: NFC(c%d=%+q) = %+q, want %+q", n, i+1, c[i], got, want)
			}
			if got := nfcSlow(c[i]); got != want {
				t.Errorf("line %d: nfcSlow(c%d=%+q) = %+q, want %+q", n, i+1, c[i], got, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if tested < 15000 {
		t.Errorf("only %d lines tested", tested)
	}
	t.Logf("%d lines tested, %d skipped (code points newer than 9.0)", tested, skipped)
}

// TestNFCAllCodePoints compares the quick-check path with the full algorithm for
// every code point in a few contexts.
func TestNFCAllCodePoints(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (3 s); skipped with -short")
	}
	var b []byte
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		c := string(r)
		for _, s := range []string{c, "a" + c, c + "\u0301", "e" + c + "\u0301", c + "\u0323\u0307",
			"\u1100" + c + "\u11a8", c + "\u1161", "\u0301" + c + "x"} {
			if got, want := NFC(s), nfcSlow(s); got != want {
				t.Fatalf("NFC(%+q) = %+q, nfcSlow = %+q", s, got, want)
			}
		}
		b = utf8.AppendRune(b, r)
	}
	if got, want := NFC(string(b)), nfcSlow(string(b)); got != want {
		t.Fatal("NFC and nfcSlow differ on all code points in a row")
	}
}

func TestNFCFastPathNoAlloc(t *testing.T) {
	for _, s := range []string{
		"",
		"plain ASCII text, long enough to use the 8-byte loop. 0123456789",
		"naïve café 日本語",
		"Ελληνικά, русский, हिन्दी, 한국어, עִבְרִית, 🙂",
		"x\u0301", // NFC_QC=Maybe but unchanged
		"a\U0001F600\u0301",
	} {
		if got := NFC(s); got != s || unsafe.StringData(got) != unsafe.StringData(s) {
			t.Errorf("NFC(%+q) = %+q, want the same string", s, got)
		}
		if n := testing.AllocsPerRun(100, func() { _ = NFC(s) }); n != 0 {
			t.Errorf("NFC(%+q): %v allocations, want 0", s, n)
		}
	}
}

func FuzzNFC(f *testing.F) {
	for _, s := range []string{"", "abc", "e\u0301", "a\u0307\u0323x", "\u1100\u1161\u11a8", "\uf900\u212b",
		"\U00020041\u0301", "x\u0301\u1dfa", "\xff\u0301", "\xe2\x82", "Vie\u0302\u0323t nam"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NFC(s)
		if slow := nfcSlow(s); got != slow {
			t.Fatalf("NFC(%+q) = %+q, nfcSlow = %+q", s, got, slow)
		}
		if again := NFC(got); again != got {
			t.Fatalf("NFC(%+q) = %+q, not idempotent: %+q", s, got, again)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("NFC(%+q) = %+q is invalid UTF-8", s, got)
		}
		if strings.Count(got, " ") != strings.Count(s, " ") {
			t.Fatalf("NFC(%+q) = %+q changed the spaces", s, got)
		}
	})
}

func benchmarkNFC(b *testing.B, unit string) {
	s := strings.Repeat(unit, 1<<20/len(unit)+1)[:1<<20]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		NFC(s)
	}
}

func BenchmarkNFCASCII(b *testing.B) {
	benchmarkNFC(b, "The quick brown fox jumps over the lazy dog.\nIt's 42 degrees; \"hot\" (very)!\t")
}

func BenchmarkNFCMixed(b *testing.B) {
	benchmarkNFC(b, "The naïve café served crème brûlée. 日本語のテキスト, 中文文本. "+
		"Ελληνικά και русский текст. 한국어 문장입니다. हिन्दी पाठ. Emoji 🙂!\n")
}

// BenchmarkNFCDecomposed measures the slow path: every accent needs composing.
func BenchmarkNFCDecomposed(b *testing.B) {
	benchmarkNFC(b, "Tie\u0302\u0301ng Vie\u0302\u0323t co\u0301 da\u0302\u0301u. cafe\u0301 \u1100\u1161\u11a8 ")
}

// TestNFCDecode: nfcDecode is utf8.DecodeRuneInString on every sequence of up to
// three bytes that starts at or above 0x80, whole and cut short, and with a byte
// after it.
func TestNFCDecode(t *testing.T) {
	buf := make([]byte, 4)
	for c0 := 0x80; c0 < 0x100; c0++ {
		for c1 := 0; c1 < 0x100; c1++ {
			for c2 := 0; c2 < 0x100; c2++ {
				buf[0], buf[1], buf[2], buf[3] = byte(c0), byte(c1), byte(c2), 'a'
				for _, n := range []int{1, 2, 3, 4} {
					if n < 3 && c2 > 0 || n < 2 && c1 > 0 {
						continue // the shorter forms once per prefix
					}
					s := string(buf[:n])
					r, size := nfcDecode(s, 0)
					wr, wsize := utf8.DecodeRuneInString(s)
					if r != wr || size != wsize {
						t.Fatalf("nfcDecode(% x) = %U, %d; want %U, %d", s, r, size, wr, wsize)
					}
				}
			}
		}
	}
}
