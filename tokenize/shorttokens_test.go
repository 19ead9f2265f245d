package tokenize

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestShortTokensTwin: appendShortTokens (assembly on amd64) and its twin
// appendShortTokensGo append the same ids and stop at the same piece, for int and int32
// ids, from every start in a batch of pieces, with room for few or many ids, on text
// whose pieces the front cache holds in part (one to three ids, four or more, 9-16
// bytes, missing ones).
func TestShortTokensTwin(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	rng := rand.New(rand.NewPCG(5, 6))
	// Words of four or more tokens (front.more) among the rest, many in a row.
	var many strings.Builder
	for range 300 {
		many.WriteString([]string{" GLOUCESTER", " XQZJVK", " interconnectedness", " the", " Pneumonoultra", "\n\nKING RICHARD"}[rng.IntN(6)])
	}
	text := randomSplitText(rng, 20000) + " the quick brown fox's international interconnectedness 12345678 ...." + many.String() + randomSplitText(rng, 2000)
	st := tok.getState()
	defer tok.putState(st)
	st.front.init()
	// Fill the front cache from the first half of the pieces only.
	ends := splitAll(tok.split, &st.win, text, nil)
	for k, prev := 0, 0; k < len(ends)/2; k++ {
		encodePiece[int](tok, st, text, prev, ends[k], nil)
		prev = ends[k]
	}
	for _, avail := range []int{len(text), len(text) - 20} {
		for from := 0; from < len(ends); from += 1 + rng.IntN(40) {
			prev := 0
			if from > 0 {
				prev = ends[from-1]
			}
			batch := ends[from:min(len(ends), from+200)]
			for _, room := range []int{0, 1, 3, 5, 7, 12, 1000} {
				want, wantK := appendShortTokensGo(&st.front, text, avail, prev, batch, make([]int, 3, 3+room))
				got, gotK := appendShortTokens(&st.front, text, avail, prev, batch, make([]int, 3, 3+room))
				if gotK != wantK || !slices.Equal(got, want) {
					t.Fatalf("int, from %d, room %d: %d pieces %v, twin %d pieces %v", from, room, gotK, got, wantK, want)
				}
				want32, wantK := appendShortTokensGo(&st.front, text, avail, prev, batch, make([]int32, 1, 1+room))
				got32, gotK := appendShortTokens(&st.front, text, avail, prev, batch, make([]int32, 1, 1+room))
				if gotK != wantK || !slices.Equal(got32, want32) {
					t.Fatalf("int32, from %d, room %d: %d pieces %v, twin %d pieces %v", from, room, gotK, got32, wantK, want32)
				}
			}
		}
	}
}

// TestFrontMoreStartsOver: the ids of pieces of four or more tokens (frontCache.more)
// are given back right or not at all after more has started over (many times), never
// another piece's.
func TestFrontMoreStartsOver(t *testing.T) {
	var f frontCache
	f.init()
	type piece struct {
		lo, hi uint64
		n      int
		ids    []int
	}
	rng := rand.New(rand.NewPCG(9, 10))
	var pieces []piece
	for i := range 3 * frontMoreIDs / 8 {
		p := piece{lo: rng.Uint64() &^ (0xFF << 56), n: 1 + rng.IntN(16)}
		if p.n > 8 {
			p.hi = rng.Uint64() &^ (0xFF << 56)
		}
		for range 4 + rng.IntN(8) {
			p.ids = append(p.ids, rng.IntN(1<<idBits))
		}
		putIDs(&f, p.lo, p.hi, p.n, p.ids)
		pieces = append(pieces, p)
		if i%1000 != 999 {
			continue
		}
		found := 0
		for _, q := range pieces {
			val, ok := f.find(q.lo, q.hi, q.n)
			if !ok || val>>60 != 0 {
				continue
			}
			ids, ok := f.moreIDs(val, q.lo, q.hi)
			if !ok {
				continue
			}
			found++
			got := make([]int, len(ids))
			for k, id := range ids {
				got[k] = int(id)
			}
			if !slices.Equal(got, q.ids) {
				t.Fatalf("after %d pieces: ids %v, want %v", i+1, got, q.ids)
			}
		}
		if found == 0 {
			t.Fatalf("after %d pieces: none found", i+1)
		}
	}
}

// TestShortTokensUnderCollector, a smoke test of the assembly hot loop (whose text,
// piece ends and ids' array go to it as bare addresses: shortArgs) under the collector:
// AppendEncode into a caller's array, in four goroutines, at stack depths that make the
// stacks grow and shrink between calls, with the collector running all the while, gives
// the reference encoder's ids. (It cannot show that the addresses are safe: everything
// they point to is on the heap and held by the callers; see shortArgs for why that holds.)
func TestShortTokensUnderCollector(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	rng := rand.New(rand.NewPCG(7, 8))
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = randomSplitText(rng, 40+rng.IntN(200))
	}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = tok.refEncode(s)
	}
	stop := make(chan struct{})
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				i := (g*rounds + r) % len(texts)
				if got := encodeOnStack(tok, texts[i], r%7*40); !slices.Equal(got, want[i]) {
					errs <- fmt.Sprintf("goroutine %d, round %d, text %d: ids differ from the reference encoder's", g, r, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-collected
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// encodeOnStack encodes s into an array of its own, depth frames down (each with a 1 KB
// array on the stack, so that the stack grows), and returns a copy of the ids.
func encodeOnStack(tok *Tokenizer, s string, depth int) []int {
	var pad [128]int
	if depth > 0 {
		pad[depth%128] = depth
		out := encodeOnStack(tok, s, depth-1)
		if pad[depth%128] != depth {
			panic("stack array changed")
		}
		return out
	}
	var buf [512]int
	ids := tok.AppendEncode(buf[:0], s)
	return slices.Clone(ids)
}
