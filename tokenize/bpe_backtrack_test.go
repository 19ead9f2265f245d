package tokenize

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"gptkit/internal/testfiles"
)

// btEncode runs the backtracking encoder of tok on p (which must exist).
func btEncode(tb testing.TB, tok *Tokenizer, p string) []int {
	tb.Helper()
	bt := tok.longEncoder()
	if bt == nil {
		tb.Fatalf("%s: no backtracking encoder", tok.Name())
	}
	st := tok.getState()
	defer tok.putState(st)
	ids, ok := bt.encode(&st.bt, p, nil)
	if !ok && !strings.ContainsFunc(p, func(r rune) bool {
		return r == utf8.RuneError // a byte the vocabulary may lack
	}) {
		tb.Fatalf("%s: backtracking ran out of tokens on %.60q", tok.Name(), p)
	}
	if !ok {
		ids = tok.merge(st, p)
	}
	return toInts(ids)
}

// btInputs are long pieces of the kinds BenchmarkEncodeAdversarial times, smaller, and
// pieces of few distinct characters (merges overlap).
func btInputs(rng *rand.Rand) []string {
	var ins []string
	gen := func(n int, next func() string) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(next())
		}
		return b.String()
	}
	for range 40 {
		n := 1 + rng.Intn(3000)
		letters := gen(n, func() string { return string(rune('a' + rng.Intn(26))) })
		words := gen(n, func() string {
			return []string{"the", "and", "ing", "tion", "er", "qu", "x", "Th", "ou"}[rng.Intn(9)]
		})
		digits := gen(n, func() string { return string(rune('0' + rng.Intn(10))) })
		ascii := gen(n, func() string { return string(rune(33 + rng.Intn(94))) })
		script := gen(n, func() string {
			return string([]rune("абвгдеёжзийклмнопрстуфхцчшщъыьэюяاببتثجحخدذ中文字母ไทยभारत")[rng.Intn(49)])
		})
		few := gen(n, func() string { return []string{"a", "b", "e", "th", "in", "er"}[:1+rng.Intn(6)][0] })
		alphabet := []string{"a", "b", "e", "th", "in", "er", " ", "Ġ"}[:1+rng.Intn(8)]
		mixed := gen(n, func() string { return alphabet[rng.Intn(len(alphabet))] })
		rep := strings.Repeat(string(rune(33+rng.Intn(94))), n)
		bytes := gen(n, func() string { return string([]byte{byte(rng.Intn(256))}) })
		ins = append(ins, letters, words, digits, ascii, script, few, mixed, rep, bytes)
	}
	return ins
}

// TestBacktrack: the backtracking encoder of long pieces gives what the reference's
// merge loop gives, on long pieces of every adversarial kind and on the pieces of real
// text; and the tokens it uses are those BPE rebuilds from their own bytes.
func TestBacktrack(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	inputs := btInputs(rng)
	textBytes, goldenDocs := 200000, math.MaxInt
	if raceEnabled {
		// One goroutine: a tenth of it under -race (312 s of the package's 648 there).
		inputs, textBytes, goldenDocs = inputs[:len(inputs)/10], 20000, 100
	}
	for _, name := range []string{"gpt2", "neox-20b"} {
		tok := sharedTokenizer(t, name)
		bt := tok.longEncoder()
		if bt == nil {
			t.Fatalf("%s: no backtracking encoder", name)
		}
		for id, s := range tok.vocab.strings() {
			if len(s) < 2 || id >= len(bt.toks) {
				continue
			}
			if v, ok := tok.tokenID(s); !ok || int(v) != id {
				continue // an added token
			}
			bad := tok.wholeBad != nil && tok.wholeBad[id]
			if bt.reachable(id) == bad {
				t.Fatalf("%s: token %d (%q): takes part %v, but BPE rebuilds it: %v", name, id, s, bt.reachable(id), !bad)
			}
		}
		// newBacktrack takes wholeBad's word for it: so must the merges, in rank order
		// (a token takes part if both halves do and are compatible).
		for _, m := range tok.merges.all() {
			tk, l, r := bt.toks[m.id], bt.toks[m.left], bt.toks[m.right]
			want := l.rank >= -1 && r.rank >= -1 && bt.compatible(m.left, m.right, 0)
			if got := tk.rank >= -1; got != want || got && (tk.left != m.left || tk.right != m.right || tk.rank != int32(m.rank)) {
				t.Fatalf("%s: token %d (%q): takes part %v (split %d %d rank %d), by its merge's halves %v (%d %d rank %d)",
					name, m.id, tok.vocab.at(int(m.id)), got, tk.left, tk.right, tk.rank, want, m.left, m.right, m.rank)
			}
		}
		st := tok.getState()
		for _, p := range inputs {
			want := tok.mergeLongHeap(st, p)
			if got := btEncode(t, tok, p); !slices.Equal(got, toInts(want)) {
				t.Fatalf("%s: backtrack(%.60q... %d bytes) differs from the merge loop", name, p, len(p))
			}
		}
		// Every piece of a real text, against the reference's BPE.
		var texts []string
		for _, d := range readGolden(t, name) {
			texts = append(texts, d.Text)
		}
		texts = texts[:min(len(texts), goldenDocs)]
		text := string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))[:textBytes] + strings.Join(texts, "\n")
		ends := splitAll(tok.split, new(classWindow), text, nil)
		prev := 0
		for _, e := range ends {
			p := text[prev:e]
			prev = e
			if got, want := btEncode(t, tok, p), tok.refBPE(p); !slices.Equal(got, want) {
				t.Fatalf("%s: backtrack(%q) = %v, reference %v", name, p, got, want)
			}
		}
		tok.putState(st)
	}
}

func toInts(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// FuzzBacktrackMatchesReference: the backtracking encoder of long pieces equals the
// reference's BPE on any piece (any bytes, not only pre-tokenizer pieces), GPT-2 and
// NeoX; long inputs are made by repeating the input.
func FuzzBacktrackMatchesReference(f *testing.F) {
	addTrickySeeds(f)
	for _, s := range btInputs(rand.New(rand.NewSource(3)))[:20] {
		f.Add(s[:min(len(s), 200)])
	}
	gpt2, neox := sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || len(s) > fuzzRefMaxLen {
			return
		}
		for _, p := range []string{s, strings.Repeat(s, 1+300/len(s))} {
			for _, tok := range []*Tokenizer{gpt2, neox} {
				if got, want := btEncode(t, tok, p), tok.refBPE(p); !slices.Equal(got, want) {
					t.Fatalf("%s: backtrack(%q) = %v, reference %v", tok.Name(), p, got, want)
				}
			}
		}
	})
}

// TestBacktrackConcurrent: goroutines that meet their first long pieces together build
// the backtracking encoder once and get the merge loop's ids (run with -race).
func TestBacktrackConcurrent(t *testing.T) {
	tok, err := LoadHFJSON(testfiles.Read(t, "tokenizers/gpt2/tokenizer.json"), "gpt2")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	inputs := btInputs(rng)[:24]
	want := make([][]int, len(inputs))
	for i, p := range inputs {
		want[i] = tok.refEncode(p)
	}
	got := tok.EncodeBatch(inputs, 8)
	for i := range inputs {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("text %d (%.40q...): EncodeBatch differs from the reference", i, inputs[i])
		}
	}
	if tok.longEncoder() == nil {
		t.Fatal("no backtracking encoder")
	}
}

// BenchmarkNewBacktrack: building the backtracking encoder's tables, which every
// process pays on its tokenizer's first long piece (cpu-ms/op: CPU time per build, the
// collector's included; the machines the team measures on are shared).
func BenchmarkNewBacktrack(b *testing.B) {
	for _, name := range []string{"gpt2", "neox-20b"} {
		b.Run(name, func(b *testing.B) {
			tok := sharedTokenizer(b, name)
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			ops := 0
			for b.Loop() {
				if newBacktrack(tok) == nil {
					b.Fatal("no backtracking encoder")
				}
				ops++
			}
			if syscall.Getrusage(syscall.RUSAGE_SELF, &ru1) == nil && ops > 0 {
				cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
				b.ReportMetric(float64(cpu)/1e6/float64(ops), "cpu-ms/op")
			}
		})
	}
}
