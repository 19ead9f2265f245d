package tokenize

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// digitRuns are runs of digits of the kinds numbers come in: uniform random digits,
// few distinct digits (merges overlap), zeros and nines, repeated years and counters,
// each at lengths around digitRunMin and far over it.
func digitRuns(rng *rand.Rand) []string {
	var runs []string
	gen := func(n int, next func() string) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(next())
		}
		return b.String()[:n]
	}
	for _, n := range []int{digitRunMin, digitRunMin + 1, 40, 100, 257, 1000, 5000} {
		alphabet := "0123456789"[:1+rng.Intn(10)]
		year := 1900
		counter := 0
		runs = append(runs,
			gen(n, func() string { return string(rune('0' + rng.Intn(10))) }),
			gen(n, func() string { return string(alphabet[rng.Intn(len(alphabet))]) }),
			gen(n, func() string { return string("019"[rng.Intn(3)]) }),
			strings.Repeat("0", n), strings.Repeat("9", n),
			gen(n, func() string { year++; return itoa(year) }),
			gen(n, func() string { counter += 7; return itoa(counter) }),
		)
	}
	return runs
}

// TestDigitRuns: runs of digits through the digit encoder give what the merge loop
// gives (and, for the shorter ones, the reference's BPE), and the encoder finds a token
// at every position of them (it never falls back).
func TestDigitRuns(t *testing.T) {
	runs := digitRuns(rand.New(rand.NewSource(4)))
	for _, name := range []string{"gpt2", "neox-20b"} {
		tok := sharedTokenizer(t, name)
		bt := tok.longEncoder()
		if bt == nil || bt.digits == nil {
			t.Fatalf("%s: no digit encoder", name)
		}
		st := tok.getState()
		for _, p := range runs {
			got, ok := bt.encodeDigits(&st.bt, p, nil)
			if !ok {
				t.Fatalf("%s: the digit encoder found no token somewhere in %.60q (%d bytes)", name, p, len(p))
			}
			if want := tok.mergeLongHeap(st, p); !slices.Equal(got, want) {
				t.Fatalf("%s: digits(%.60q... %d bytes) differs from the merge loop", name, p, len(p))
			}
			if len(p) <= 1000 {
				if want := tok.refBPE(p); !slices.Equal(toInts(got), want) {
					t.Fatalf("%s: digits(%.60q... %d bytes) differs from the reference", name, p, len(p))
				}
			}
			// Through Encode, as a pre-token of a text.
			if got, want := tok.Encode("x "+p+" y"), tok.refEncode("x "+p+" y"); !slices.Equal(got, want) {
				t.Fatalf("%s: Encode of a run of %d digits differs from the reference", name, len(p))
			}
		}
		tok.putState(st)
	}
}

// FuzzDigitsMatchReference: any run of digits (the input's bytes taken modulo 10,
// repeated past digitRunMin) encodes as the reference's BPE does, GPT-2 and NeoX.
func FuzzDigitsMatchReference(f *testing.F) {
	for _, s := range []string{"0", "12", "2024", "31415926535897932384626433832795", "999000", "1000000"} {
		f.Add(s)
	}
	gpt2, neox := sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || len(s) > fuzzRefMaxLen {
			return
		}
		b := []byte(s)
		for i := range b {
			b[i] = '0' + b[i]%10
		}
		p := strings.Repeat(string(b), 1+digitRunMin/len(b))
		for _, tok := range []*Tokenizer{gpt2, neox} {
			if got, want := btEncode(t, tok, p), tok.refBPE(p); !slices.Equal(got, want) {
				t.Fatalf("%s: digits(%q) = %v, reference %v", tok.Name(), p, got, want)
			}
		}
	})
}
