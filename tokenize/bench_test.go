//go:build unix

package tokenize_test

// Throughput, linearity, scaling and load-time benchmarks for the speed goals. `make bench`
// (tools/bench.sh) runs them next to the peers (HF tokenizers, tiktoken WASM) and
// tools/benchreport turns both into a table; run by hand:
//
//	BENCH_CORPUS=$PWD/../.cache/bench/bench.txt go test -run '^$' -bench . -cpu 1 -count 3
//
// They are Benchmark functions only, so plain `go test` never runs them. They read the
// shared files in place ($SHARED, else ../../shared); a missing file skips the benchmark,
// or fails it when CI=true. The corpus comes from $BENCH_CORPUS (unset: those
// sub-benchmarks are skipped). MB/s is 10^6 bytes of UTF-8 input per second, as in
// bench-peers.js; MB/cpu-s is the same per CPU-second of the process (getrusage, hence the
// unix build tag), the steadier figure when other jobs share the machine.
//
// Input is split exactly as bench-peers.js's splitChunks does (see benchSplitChunks) and
// each piece is one Encode call, on one goroutine: compare with the peers' "chunks" mode
// and run with -cpu 1 for single-core figures.

import (
	"fmt"
	"gptkit/internal/sharedtest"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"gptkit/tokenize"
)

// benchChunk is bench-peers.js's chunks-mode piece size: 1<<20 UTF-16 code units.
const benchChunk = 1 << 20

// benchSplitChunks splits text as bench-peers.js's splitChunks(text, chunk) does: a piece
// runs `chunk` JavaScript string units (UTF-16 code units: 1 for a code point below
// U+10000, 2 above) from its start, then on to just after the next '\n' (or to the end).
// On valid UTF-8 the pieces are byte for byte those the peers encode: JS's search for '\n'
// may start inside a surrogate pair, which cannot hold a '\n', so starting after the pair
// finds the same newline (checked against node on text full of 2-, 3- and 4-byte characters
// with small chunk sizes). Node turns invalid UTF-8 into U+FFFD when it reads the file, so
// on invalid input the two splits may differ; the corpora are valid UTF-8.
func benchSplitChunks(text string, chunk int) []string {
	var out []string
	for i := 0; i < len(text); {
		j, units := i, 0
		for j < len(text) && units < chunk {
			if c := text[j]; c < utf8.RuneSelf {
				j++
				units++
				continue
			}
			r, n := utf8.DecodeRuneInString(text[j:])
			j += n
			if r >= 0x10000 {
				units += 2
			} else {
				units++
			}
		}
		if j < len(text) {
			if k := strings.IndexByte(text[j:], '\n'); k < 0 {
				j = len(text)
			} else {
				j += k + 1
			}
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

func benchSharedPath(rel string) string { return filepath.Join(sharedtest.Dir(), rel) }

// benchMissing skips b (or fails it when CI=true) because a file it needs is missing.
func benchMissing(b *testing.B, err error, hint string) {
	b.Helper()
	sharedtest.Missing(b, "benchmark input: %v (%s)", err, hint)
}

var benchFiles sync.Map // path -> []byte

// benchReadFile reads path once per test binary.
func benchReadFile(b *testing.B, path, hint string) []byte {
	b.Helper()
	if v, ok := benchFiles.Load(path); ok {
		return v.([]byte)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		benchMissing(b, err, hint)
	}
	benchFiles.Store(path, data)
	return data
}

func benchReadShared(b *testing.B, rel string) []byte {
	b.Helper()
	return benchReadFile(b, benchSharedPath(rel), "set SHARED to the shared directory")
}

// benchLoaders are the tokenizers of the goals, loaded from the shared files.
var benchLoaders = map[string]func(b *testing.B) (*tokenize.Tokenizer, error){
	"gpt2": func(b *testing.B) (*tokenize.Tokenizer, error) {
		return tokenize.LoadHFJSON(benchReadShared(b, "tokenizers/gpt2/tokenizer.json"), "gpt2")
	},
	"gpt2-vocab-merges": func(b *testing.B) (*tokenize.Tokenizer, error) {
		return tokenize.LoadVocabMerges(benchReadShared(b, "tokenizers/gpt2/vocab.json"),
			benchReadShared(b, "tokenizers/gpt2/merges.txt"), "gpt2")
	},
	"neox-20b": func(b *testing.B) (*tokenize.Tokenizer, error) {
		return tokenize.LoadHFJSON(benchReadShared(b, "tokenizers/neox-20b/tokenizer.json"), "neox-20b")
	},
	"cl100k_base": func(b *testing.B) (*tokenize.Tokenizer, error) {
		return tokenize.LoadTiktoken(benchReadShared(b, "tokenizers/tiktoken/cl100k_base.tiktoken"), "cl100k_base")
	},
	"o200k_base": func(b *testing.B) (*tokenize.Tokenizer, error) {
		return tokenize.LoadTiktoken(benchReadShared(b, "tokenizers/tiktoken/o200k_base.tiktoken"), "o200k_base")
	},
}

var benchTokenizers sync.Map // name -> *tokenize.Tokenizer

// benchTokenizer loads one of benchLoaders once per test binary.
func benchTokenizer(b *testing.B, name string) *tokenize.Tokenizer {
	b.Helper()
	if v, ok := benchTokenizers.Load(name); ok {
		return v.(*tokenize.Tokenizer)
	}
	tok, err := benchLoaders[name](b)
	if err != nil {
		b.Fatalf("load %s: %v", name, err)
	}
	benchTokenizers.Store(name, tok)
	return tok
}

// benchInput returns the text of a named Encode input: "shakespeare" (tinyshakespeare) or
// "corpus" ($BENCH_CORPUS, skipped when unset).
func benchInput(b *testing.B, name string) string {
	b.Helper()
	switch name {
	case "shakespeare":
		return string(benchReadShared(b, "corpora/tinyshakespeare.txt"))
	case "corpus":
		p := os.Getenv("BENCH_CORPUS")
		if p == "" {
			b.Skip("BENCH_CORPUS is not set (make bench builds the corpus and sets it)")
		}
		return string(benchReadFile(b, p, "BENCH_CORPUS names a file that cannot be read"))
	}
	b.Fatalf("unknown input %q", name)
	return ""
}

var benchWarm sync.Map // key -> tokens of one pass

// benchWarmPass runs one untimed pass of encode once per key and test binary, so that the
// timed passes compare with the peers' "steady" figure (median of passes after a cold
// one), and returns the tokens of that pass.
func benchWarmPass(key string, pass func() int) int {
	if v, ok := benchWarm.Load(key); ok {
		return v.(int)
	}
	n := pass()
	benchWarm.Store(key, n)
	return n
}

// benchCPU is the CPU time (user+system) the process has used so far, or -1.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchReportCPU adds MB/cpu-s: bytesPerOp*ops over the CPU time since cpu0 (a benchCPU).
func benchReportCPU(b *testing.B, cpu0 time.Duration, ops int, bytesPerOp int) {
	if cpu1 := benchCPU(); cpu0 >= 0 && cpu1 > cpu0 && ops > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(ops)/1e6/(cpu1-cpu0).Seconds(), "MB/cpu-s")
	}
}

// benchReport adds tokens/s and tokens/op to b's results.
func benchReport(b *testing.B, ops, tokensPerOp int) {
	if s := b.Elapsed().Seconds(); s > 0 && ops > 0 {
		b.ReportMetric(float64(tokensPerOp)*float64(ops)/s, "tokens/s")
	}
	b.ReportMetric(float64(tokensPerOp), "tokens/op")
}

// BenchmarkEncode: one Encode call per ~1 MB piece (bench-peers.js "chunks" mode), one
// goroutine. bytes/op is the whole input.
func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			for _, input := range []string{"shakespeare", "corpus"} {
				b.Run(input, func(b *testing.B) {
					tok := benchTokenizer(b, name)
					text := benchInput(b, input)
					pieces := benchSplitChunks(text, benchChunk)
					pass := func() int {
						n := 0
						for _, p := range pieces {
							n += len(tok.Encode(p))
						}
						return n
					}
					tokens := benchWarmPass("encode/"+name+"/"+input, pass)
					b.SetBytes(int64(len(text)))
					b.ResetTimer()
					ops, cpu0 := 0, benchCPU()
					for b.Loop() {
						pass()
						ops++
					}
					benchReportCPU(b, cpu0, ops, len(text))
					benchReport(b, ops, tokens)
					b.ReportMetric(float64(len(pieces)), "pieces")
				})
			}
		})
	}
}

const benchAdvSize = 1 << 20

// benchAdvInputs builds the adversarial inputs, each benchAdvSize bytes of valid UTF-8 with
// no whitespace (but normal-1MB, the baseline they are compared with).
func benchAdvInputs(b *testing.B) []struct{ name, text string } {
	b.Helper()
	shakespeare := string(benchReadShared(b, "corpora/tinyshakespeare.txt"))
	fill := func(gen func(*strings.Builder)) string {
		var sb strings.Builder
		sb.Grow(benchAdvSize + 8)
		for sb.Len() < benchAdvSize {
			gen(&sb)
		}
		s := sb.String()[:benchAdvSize]
		for !utf8.ValidString(s) { // cut inside a multi-byte character
			s = s[:len(s)-1]
		}
		return s
	}
	rng := rand.New(rand.NewPCG(1, 2))
	letters := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return r
		}
		return -1
	}, shakespeare)
	const mixed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	// Letters of several scripts, all \p{L} and unchanged by NFC.
	intl := []rune("éèêëàâäôöüçñßøåæœžščřłąęžабвгдежзийклмнопрстуфхцчшщыэюяαβγδεζηθικλμνξοπρστυφχψω日本語中文字漢字한국어가나다ひらがなカタカナ")
	return []struct{ name, text string }{
		// English letters with everything else removed: one 1 MB pre-token that merges into
		// real long tokens (words glued together).
		{"no-whitespace-letters", fill(func(sb *strings.Builder) { sb.WriteString(letters) })},
		// Letters, digits and ASCII punctuation drawn at random (minified or base64-like
		// text): many short pre-tokens of every class, no spaces.
		{"no-whitespace-mixed", fill(func(sb *strings.Builder) { sb.WriteByte(mixed[rng.IntN(len(mixed))]) })},
		// Random digits: one 1 MB pre-token (GPT-2's \p{N}+ is unbounded).
		{"no-whitespace-digits", fill(func(sb *strings.Builder) { sb.WriteByte(byte('0' + rng.IntN(10))) })},
		// Random letters of several scripts (2-3 bytes each): one 1 MB pre-token of
		// multi-byte characters, most without merges between them.
		{"no-whitespace-unicode", fill(func(sb *strings.Builder) { sb.WriteRune(intl[rng.IntN(len(intl))]) })},
		// One character repeated: every pair has the same rank at every step.
		{"one-char-run", strings.Repeat("a", benchAdvSize)},
		// The baseline: the first 1 MB of tinyshakespeare.
		{"normal-1MB", fill(func(sb *strings.Builder) { sb.WriteString(shakespeare) })},
	}
}

// benchAdvMax is the longest a single 1 MB adversarial encode may be projected to take
// before the benchmark gives up on it as superlinear (BENCH_ADV_MAX, a Go duration).
func benchAdvMax() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BENCH_ADV_MAX")); err == nil && d > 0 {
		return d
	}
	return 2 * time.Minute
}

// benchProbeLinear encodes growing prefixes of text (16, 64, 256 KiB) and fails b before
// the full input if the growth projects the full encode past benchAdvMax: a quadratic
// encoder would otherwise stall the whole run on 1 MB.
func benchProbeLinear(b *testing.B, tok *tokenize.Tokenizer, text string) {
	b.Helper()
	limit := benchAdvMax()
	var prev time.Duration
	prevN := 0
	var steps []string
	for _, n := range []int{16 << 10, 64 << 10, 256 << 10} {
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		t0 := time.Now()
		tok.Encode(text[:n])
		d := time.Since(t0)
		steps = append(steps, fmt.Sprintf("%d KiB %v", n>>10, d.Round(time.Microsecond)))
		if prev > 0 {
			e := math.Log(float64(d)/float64(prev)) / math.Log(float64(n)/float64(prevN))
			e = math.Max(e, 1)
			proj := time.Duration(float64(d) * math.Pow(float64(len(text))/float64(n), e))
			if proj > limit {
				b.Fatalf("superlinear: %s; growth exponent %.2f projects %v for %d bytes, over BENCH_ADV_MAX=%v; not running it",
					strings.Join(steps, ", "), e, proj.Round(time.Millisecond), len(text), limit)
			}
		}
		prev, prevN = d, n
	}
}

// BenchmarkEncodeAdversarial: one Encode call on 1 MB inputs built to be hard (see
// benchAdvInputs); the goal is at most 5× the per-byte time of normal-1MB (ns/byte metric).
func BenchmarkEncodeAdversarial(b *testing.B) {
	for _, name := range []string{"gpt2", "neox-20b"} {
		b.Run(name, func(b *testing.B) {
			for _, in := range benchAdvInputs(b) {
				b.Run(in.name, func(b *testing.B) {
					tok := benchTokenizer(b, name)
					tokens := benchWarmPass("adv/"+name+"/"+in.name, func() int {
						benchProbeLinear(b, tok, in.text)
						return len(tok.Encode(in.text))
					})
					b.SetBytes(int64(len(in.text)))
					b.ResetTimer()
					ops, cpu0 := 0, benchCPU()
					for b.Loop() {
						tok.Encode(in.text)
						ops++
					}
					benchReportCPU(b, cpu0, ops, len(in.text))
					benchReport(b, ops, tokens)
					if ops > 0 {
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops)/float64(len(in.text)), "ns/byte")
					}
				})
			}
		})
	}
}

// BenchmarkEncodeBatchWorkers: EncodeBatch with 1 and 2 workers (GPT-2) over 16 pieces of
// ~1 MB of tinyshakespeare repeated (an even count of near-equal pieces, so 2 workers can
// reach 2×). Run with -cpu 2 (or more); the goal is 2 workers ≥ 1.8× one.
func BenchmarkEncodeBatchWorkers(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprint(workers), func(b *testing.B) {
			tok := benchTokenizer(b, "gpt2")
			shakespeare := string(benchReadShared(b, "corpora/tinyshakespeare.txt"))
			const nPieces = 16
			reps := (nPieces+1)*benchChunk/len(shakespeare) + 2
			pieces := benchSplitChunks(strings.Repeat(shakespeare, reps), benchChunk)[:nPieces]
			total := 0
			for _, p := range pieces {
				total += len(p)
			}
			pass := func() int {
				n := 0
				for _, ids := range tok.EncodeBatch(pieces, workers) {
					n += len(ids)
				}
				return n
			}
			tokens := benchWarmPass(fmt.Sprintf("batch/%d", workers), pass)
			b.SetBytes(int64(total))
			b.ResetTimer()
			ops, cpu0 := 0, benchCPU()
			for b.Loop() {
				pass()
				ops++
			}
			benchReport(b, ops, tokens)
			// CPUs the process got: below ~1.8 with 2 workers the machine was too busy to judge.
			if cpu1 := benchCPU(); cpu0 >= 0 && cpu1 > cpu0 && b.Elapsed() > 0 {
				b.ReportMetric((cpu1-cpu0).Seconds()/b.Elapsed().Seconds(), "cpu/wall")
			}
		})
	}
}

// BenchmarkLoad: building a tokenizer from bytes already in memory ("mem") and from its
// files, reading included ("file"); ms/op is the figure of the < 150 ms goal. tools/bench.sh
// runs it at the default GOMAXPROCS, as a program loading a tokenizer would. The timed loads
// follow an untimed one, so one-time package initialisation (if any) is not counted.
func BenchmarkLoad(b *testing.B) {
	variants := []struct {
		name  string
		files []string
		load  func(data [][]byte) (*tokenize.Tokenizer, error)
	}{
		{"gpt2-tokenizer.json", []string{"tokenizers/gpt2/tokenizer.json"},
			func(d [][]byte) (*tokenize.Tokenizer, error) { return tokenize.LoadHFJSON(d[0], "gpt2") }},
		{"gpt2-vocab-merges", []string{"tokenizers/gpt2/vocab.json", "tokenizers/gpt2/merges.txt"},
			func(d [][]byte) (*tokenize.Tokenizer, error) { return tokenize.LoadVocabMerges(d[0], d[1], "gpt2") }},
		{"neox-20b", []string{"tokenizers/neox-20b/tokenizer.json"},
			func(d [][]byte) (*tokenize.Tokenizer, error) { return tokenize.LoadHFJSON(d[0], "neox-20b") }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			for _, from := range []string{"mem", "file"} {
				b.Run(from, func(b *testing.B) {
					data := make([][]byte, len(v.files))
					for i, f := range v.files {
						data[i] = benchReadShared(b, f)
					}
					if _, err := v.load(data); err != nil { // warm-up, untimed
						b.Fatalf("load %s: %v", v.name, err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					ops := 0
					for b.Loop() {
						if from == "file" {
							for i, f := range v.files {
								d, err := os.ReadFile(benchSharedPath(f))
								if err != nil {
									b.Fatal(err)
								}
								data[i] = d
							}
						}
						if _, err := v.load(data); err != nil {
							b.Fatalf("load %s: %v", v.name, err)
						}
						ops++
					}
					if ops > 0 {
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops)/1e6, "ms/op")
					}
				})
			}
		})
	}
}
