package tokenize

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
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
