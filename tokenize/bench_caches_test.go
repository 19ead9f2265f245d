//go:build unix

package tokenize_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gptkit/internal/testfiles"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// BenchmarkEncodeCaches: what the tokenizer's caches being warm from the very text is
// worth. EncodeBatch (all cores, GPT-2) of $BENCH_CORPUS (default tinyshakespeare) as 4 KB
// documents, cut at line ends as BenchmarkCLIVsLibrary cuts them, timed two ways in each
// round: warm, the second of two passes back to back (its caches hold the text's pieces:
// BenchmarkCLIVsLibrary's library side), and empty, one pass of a tokenizer loaded for it
// outside the clock (what a process that encodes the text once has; the memory of the
// ids is reused in both). MB/cpu-s of each is the median of the rounds;
// empty_extra_pct the median of the rounds' 100 × (empty CPU / warm CPU − 1). The two
// go in turn first.
//
//	BENCH_CORPUS=$PWD/../.cache/bench/mixed.txt go test -run '^$' -bench EncodeCaches -benchtime 6x
func BenchmarkEncodeCaches(b *testing.B) {
	text := string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
	if p := os.Getenv("BENCH_CORPUS"); p != "" {
		text = string(benchReadFile(b, p, "BENCH_CORPUS names a file that cannot be read"))
	}
	for !utf8.ValidString(text) {
		text = text[:len(text)-1]
	}
	var docs []string
	for rest := text; rest != ""; {
		n := min(len(rest), 4096)
		if k := strings.LastIndexByte(rest[:n], '\n'); k > 0 && n < len(rest) {
			n = k + 1
		}
		for n < len(rest) && !utf8.RuneStart(rest[n]) {
			n++
		}
		docs, rest = append(docs, rest[:n]), rest[n:]
	}
	load := func() *tokenize.Tokenizer {
		tok, err := spec.Load(context.Background(), "gpt2", spec.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	pass := func(tok *tokenize.Tokenizer) time.Duration {
		runtime.GC() // the pool keeps the states over one collection
		c0 := benchCPU()
		runtime.KeepAlive(tok.EncodeBatch(docs, runtime.GOMAXPROCS(0)))
		return benchCPU() - c0
	}
	warmTok := load()
	warm := func() time.Duration {
		pass(warmTok)
		return pass(warmTok)
	}
	empty := func() time.Duration { return pass(load()) }
	var warms, empties, extra []float64
	mb := float64(len(text)) / 1e6
	for i := 0; b.Loop(); i++ {
		var w, e time.Duration
		if i%2 == 0 {
			w, e = warm(), empty()
		} else {
			e, w = empty(), warm()
		}
		warms, empties = append(warms, mb/w.Seconds()), append(empties, mb/e.Seconds())
		extra = append(extra, 100*(e.Seconds()/w.Seconds()-1))
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(warms), "warm_MB/cpu-s")
	b.ReportMetric(median(empties), "empty_MB/cpu-s")
	b.ReportMetric(median(extra), "empty_extra_pct")
	b.ReportMetric(mb, "MB")
}
