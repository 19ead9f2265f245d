package tokenize

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// byteClassesOf is the obvious form of what classWindow computes: the class of the
// character holding each byte of s.
func byteClassesOf(s string) []uint8 {
	out := make([]uint8, 0, len(s))
	for _, r := range s {
		cls := runeClass(r)
		for range utf8.RuneLen(r) {
			out = append(out, cls)
		}
	}
	return out
}

// TestClassifyBlocks: the assembly (where it runs) and the SWAR version give the same
// masks, bit for bit, as a byte-by-byte loop, on every byte value at every position.
func TestClassifyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 64*40)
	for i := range 256 {
		src[i] = byte(i)
	}
	for i := 256; i < len(src); i++ {
		src[i] = byte(rng.IntN(256))
	}
	want := make([]classBlock, len(src)/64)
	for i, c := range src {
		b := &want[i/64]
		bit := uint64(1) << (i % 64)
		switch c {
		case ' ':
			b[blockSpaceChar] |= bit
		case '\'':
			b[blockApostrophe] |= bit
		case '\r', '\n':
			b[blockCRLF] |= bit
		}
		switch {
		case c >= 0x80:
			b[blockMulti] |= bit
			b[blockHigh] |= bit
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			b[classLetter] |= bit
		case c >= '0' && c <= '9':
			b[classNumber] |= bit
		case c == ' ', c >= '\t' && c <= '\r':
			b[classSpace] |= bit
		}
	}
	impls := map[string]func([]classBlock, []byte){"classifyBlocks": classifyBlocks, "classifyBlocksGo": classifyBlocksGo}
	for name, f := range asmClassifiers {
		impls[name] = f
	}
	for name, f := range impls {
		for _, n := range []int{1, 2, 3, 40} {
			got := make([]classBlock, n)
			f(got, src[:64*n])
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s, %d blocks: block %d = %x, want %x", name, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestClassWindow: every byte's class, read through a window that moves forward,
// equals its character's class, for texts of many scripts and lengths around the
// block and window sizes.
func TestClassWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("aZ09 \t\n\r'.,-é€日本𝔸𝟘\u00a0\u3000\u2028\u0301\U0001F600٣")
	for _, n := range []int{0, 1, 63, 64, 65, 127, 1000, windowBlocks*64 - 1, windowBlocks * 64, windowBlocks*64 + 5, 3*windowBlocks*64 + 17} {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		want := byteClassesOf(s)
		var w classWindow
		w.reset(s)
		for i := 0; i < len(s); i++ {
			w.ensure(i)
			if got := w.class(i); got != want[i] {
				t.Fatalf("len %d: class(%d) = %d, want %d (byte %#x)", len(s), i, got, want[i], s[i])
			}
		}
		// runEnd from every position, on a fresh window each time.
		for i := 0; i < len(s); i += 1 + rng.IntN(7) {
			w.reset(s)
			w.ensure(i)
			cls := want[i]
			e := i
			for e < len(s) && want[e] == cls {
				e++
			}
			if got := w.runEnd(i, cls); got != e {
				t.Fatalf("len %d: runEnd(%d, %d) = %d, want %d", len(s), i, cls, got, e)
			}
		}
	}
}

// asmClassifiers are the assembly classifiers this CPU can run, by name (every one,
// not only the one classifyBlocks picks); classify_amd64_test.go fills it.
var asmClassifiers = map[string]func([]classBlock, []byte){}

// TestASCIIPrefix: asciiPrefix (AVX2 where the CPU has it) equals its twin
// asciiPrefixGo, whose prefix is whole 128-byte chunks of ASCII bytes other than c, and
// validUTF8 agrees with utf8.ValidString, with one byte ≥ 0x80, an invalid sequence or
// the byte c at every position of texts around the 128-byte steps.
func TestASCIIPrefix(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 255, 256, 300, 1000} {
		base := strings.Repeat("abcdefg ", n/8+1)[:n]
		check := func(s string, c byte) {
			if got, want := asciiPrefix(s, c), asciiPrefixGo(s, c); got != want {
				t.Fatalf("len %d, c %q: asciiPrefix = %d, asciiPrefixGo = %d", len(s), c, got, want)
			}
			p := asciiPrefixGo(s, c)
			if p%128 != 0 || p > len(s) || strings.IndexFunc(s[:p], func(r rune) bool { return r >= 0x80 }) >= 0 || strings.IndexByte(s[:p], c) >= 0 {
				t.Fatalf("len %d, c %q: asciiPrefixGo = %d is not whole chunks of ASCII without c", len(s), c, p)
			}
			if p+128 <= len(s) && strings.IndexFunc(s[p:p+128], func(r rune) bool { return r >= 0x80 || r == utf8.RuneError }) < 0 && strings.IndexByte(s[p:p+128], c) < 0 {
				t.Fatalf("len %d, c %q: asciiPrefixGo = %d stops before a chunk it could take", len(s), c, p)
			}
			valid, noC := validUTF8(s, c)
			if valid != utf8.ValidString(s) {
				t.Fatalf("len %d: validUTF8 = %v, utf8.ValidString = %v", len(s), valid, !valid)
			}
			if c >= 0x80 && noC != 0 || c < 0x80 && strings.IndexByte(s[:noC], c) >= 0 {
				t.Fatalf("len %d, c %q: validUTF8 says no c in the first %d bytes", len(s), c, noC)
			}
		}
		for _, c := range []byte{'<', 0, 0x80} {
			check(base, c)
			for i := 0; i < n; i++ {
				check(base[:i]+"\xff"+base[i+1:], c)
				check(base[:i]+"<"+base[i+1:], c)
				check(base[:i]+"\x00"+base[i+1:], c)
				if i+2 <= n {
					check(base[:i]+"é"+base[i+2:], c)
				}
			}
		}
	}
}

// fixMultiSlow is the obvious form of classWindow.fixMulti (what it was before it
// decoded in place): for each marked byte, find its character's first byte, decode it
// with the standard library and mark its bytes one character at a time.
func (w *classWindow) fixMultiSlow(nb int) {
	done := w.base
	for bi := range nb {
		m := w.blocks[bi][blockMulti]
		start := w.base + bi<<6
		if done > start {
			if done-start >= 64 {
				continue
			}
			m &^= 1<<uint(done-start) - 1
		}
		for m != 0 {
			done = w.fixCharSlow(start + bits.TrailingZeros64(m))
			if done-start >= 64 {
				break
			}
			m &^= 1<<uint(done-start) - 1
		}
	}
}

// windowMasks fills a window of s at p with fixMulti or fixMultiSlow and returns its
// letter, number and space masks.
func windowMasks(s string, p int, slow bool) [][3]uint64 {
	var w classWindow
	w.reset(s)
	fix := w.fixMulti
	if slow {
		fix = w.fixMultiSlow
	}
	// fill, with the chosen fixer.
	first := max(p>>6-1, 0)
	nb := min(windowBlocks, (len(s)+63)>>6-first)
	base := first << 6
	for k := range nb {
		var blk [64]byte
		copy(blk[:], s[min(base+k<<6, len(s)):])
		classifyBlocks(w.blocks[k:k+1], blk[:])
	}
	w.base, w.limit = base, base+nb<<6
	fix(nb)
	out := make([][3]uint64, nb)
	for k := range out {
		out[k] = [3]uint64{w.blocks[k][classLetter], w.blocks[k][classNumber], w.blocks[k][classSpace]}
	}
	return out
}

// TestFixMultiMatchesSlow: fixMulti's in-place decoding marks the same bits as
// fixMultiSlow on valid UTF-8 of every length and on invalid UTF-8 (which
// AppendEncodeValidInt32 may be given: its ids must not change either), for windows
// that start anywhere, mid-character included.
func TestFixMultiMatchesSlow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []rune("aZ09 \t'.é€日本𝔸𝟘\u00a0\u3000\u0301\U0001F600٣\u07ff\u0800\uffff\U00010000\U0010FFFF\ud7ff\ue000")
	edge := []string{"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe0\x81\x81", "\xc1\x81", "\xf0\x80\x81\x81", "\xf9\x80\x80\x80", "\xf8\xa0\x80\x80", "\xfc\x80\x81\x81", "\xf4\x80\x80\x81", "\xf8\x88\x80\x80\x80", "\xff", "\x80", "\xbf", "\xc3", "\xe6\x97", "\xf0\x9f\x98"}
	for iter := range 3000 {
		var sb strings.Builder
		n := rng.IntN(3 * 64 * 4)
		if iter%50 == 0 {
			n = windowBlocks*64 + rng.IntN(300)
		}
		for sb.Len() < n {
			switch rng.IntN(8) {
			case 0:
				sb.WriteString(edge[rng.IntN(len(edge))])
			case 1:
				sb.WriteByte(byte(0x80 + rng.IntN(128)))
			default:
				sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
		}
		s := sb.String()
		if iter%2 == 0 {
			s = strings.ToValidUTF8(s, "\ufffd")
		}
		if s == "" {
			continue
		}
		p := rng.IntN(len(s))
		got, want := windowMasks(s, p, false), windowMasks(s, p, true)
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%q at %d: block %d masks %x, want %x", s, p, k, got[k], want[k])
			}
		}
	}
}

// benchUnicodeText is 1 MB of letters of several scripts, 2 and 3 bytes each (as
// BenchmarkEncodeAdversarial's no-whitespace-unicode).
func benchUnicodeText() string {
	rng := rand.New(rand.NewPCG(1, 2))
	intl := []rune("éèêëàâäôöüçñßøåæœžščřłąęžабвгдежзийклмнопрстуфхцчшщыэюяαβγδεζηθικλμνξοπρστυφχψω日本語中文字漢字한국어가나다ひらがなカタカナ")
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteRune(intl[rng.IntN(len(intl))])
	}
	return sb.String()
}

// BenchmarkValidUTF8: validRest (AVX2 where the CPU has it) and utf8.ValidString on
// benchUnicodeText.
func BenchmarkValidUTF8(b *testing.B) {
	s := benchUnicodeText()
	for _, f := range []struct {
		name  string
		valid func(string) bool
	}{{"validRest", validRest}, {"ValidUTF8", ValidUTF8}, {"utf8.ValidString", utf8.ValidString}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if !f.valid(s) {
					b.Fatal("not valid")
				}
			}
		})
	}
}

// BenchmarkClassWindow: filling class windows over 1 MB of letters of several
// scripts (2 and 3 bytes each; the text of BenchmarkEncodeAdversarial's
// no-whitespace-unicode) and of ASCII, with fixMulti and with its twin fixMultiSlow.
func BenchmarkClassWindow(b *testing.B) {
	for _, in := range []struct{ name, text string }{{"unicode", benchUnicodeText()}, {"ascii", strings.Repeat("The quick brown fox, 1234. ", 1<<20/27)}} {
		for _, slow := range []bool{false, true} {
			name := in.name + "/fixMulti"
			if slow {
				name += "Slow"
			}
			b.Run(name, func(b *testing.B) {
				s := in.text
				var w classWindow
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					w.reset(s)
					for p := 0; p < len(s); p = w.limit {
						// fill, with the chosen fixer (windowMasks does the same).
						first := max(p>>6-1, 0)
						nb := min(windowBlocks, (len(s)+63)>>6-first)
						if first<<6+nb<<6 > len(s) {
							break
						}
						classifyBlocks(w.blocks[:nb], unsafe.Slice(unsafe.StringData(s[first<<6:]), nb<<6))
						w.base, w.limit = first<<6, first<<6+nb<<6
						if slow {
							w.fixMultiSlow(nb)
						} else {
							w.fixMulti(nb)
						}
					}
				}
			})
		}
	}
}

// FuzzFixMultiMatchesSlow: on any bytes, valid UTF-8 or not, and a window placed
// anywhere, fixMulti marks the same bits as fixMultiSlow (see TestFixMultiMatchesSlow).
func FuzzFixMultiMatchesSlow(f *testing.F) {
	f.Add("日本語 é\xe0\x81\x81\xf8\xa0\x80\x80\xed\xa0\x80𝔸", 3)
	f.Add(strings.Repeat("ひらがなabc€", 30)+"\xf0\x9f\x98", 100)
	f.Fuzz(func(t *testing.T, s string, p int) {
		if s == "" {
			return
		}
		p = int(uint(p) % uint(len(s)))
		got, want := windowMasks(s, p, false), windowMasks(s, p, true)
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%q at %d: block %d masks %x, want %x", s, p, k, got[k], want[k])
			}
		}
	})
}

// utf8Pieces are valid characters of every length and bound, and the ill-formed
// sequences utf8 rejects (overlong, surrogate, too large, cut short, stray), for the
// validity tests.
var utf8Pieces = []string{"a", " ", "é", "\u07ff", "\u0800", "日", "\ud7ff", "\ue000", "\uffff", "\U00010000", "😀", "\U0010FFFF",
	"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
	"\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xff", "\xfe", "\x80", "\xbf", "\xc3", "\xe6\x97", "\xf0\x9f\x98", "\xc3\xa9\xa9"}

// TestValidRest: validRest (AVX2 where the CPU has it) agrees with utf8.ValidString
// with each valid or ill-formed piece at every position of texts around the 32-byte
// steps, and on random mixtures of them.
func TestValidRest(t *testing.T) {
	check := func(s string) {
		if got, want := validRest(s), utf8.ValidString(s); got != want {
			t.Fatalf("validRest(%q) = %v, utf8.ValidString = %v", s, got, want)
		}
		if got, want := ValidUTF8(s), utf8.ValidString(s); got != want {
			t.Fatalf("ValidUTF8(%q) = %v, utf8.ValidString = %v", s, got, want)
		}
	}
	for _, n := range []int{0, 31, 32, 63, 64, 65, 95, 96, 97, 130} {
		for _, fill := range []string{"a", "é", "日", "😀"} {
			base := strings.Repeat(fill, n/len(fill)+1)
			base = base[:len(base)/len(fill)*len(fill)]
			for _, piece := range utf8Pieces {
				for i := 0; i <= len(base); i += len(fill) {
					check(base[:i] + piece + base[i:])
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var sb strings.Builder
		for n := rng.IntN(200); sb.Len() < n; {
			if rng.IntN(30) == 0 {
				sb.WriteString(utf8Pieces[rng.IntN(len(utf8Pieces))])
			} else {
				sb.WriteString(utf8Pieces[rng.IntN(12)])
			}
		}
		check(sb.String())
	}
}

// FuzzValidUTF8: validRest and ValidUTF8 agree with utf8.ValidString on any bytes.
func FuzzValidUTF8(f *testing.F) {
	for _, p := range utf8Pieces {
		f.Add(strings.Repeat("é日", 11) + p + strings.Repeat("x", 40))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validRest(s), utf8.ValidString(s); got != want {
			t.Fatalf("validRest(%q) = %v, utf8.ValidString = %v", s, got, want)
		}
	})
}
