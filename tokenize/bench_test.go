//go:build unix

package tokenize_test

// Throughput, linearity, scaling benchmarks for the speed goals. `make bench`
// (tools/bench.sh) runs them next to the peers (HF tokenizers, tiktoken WASM, tiktoken-rs
// native: tools/bench-peers.js) and tools/benchreport turns both into a table; by hand:
//
//	BENCH_INPUTS=english=$PWD/../.cache/bench/english.txt go test -run '^$' -bench Encode -cpu 1 -count 3
//
// They are Benchmark functions only, so plain `go test` never runs them. The tokenizers
// are the named ones (tokenize/spec: compiled into the binary). The inputs are
// $BENCH_INPUTS, NAME=PATH,... (unset: tinyshakespeare, shipped in the repository).
// MB/s is 10^6 bytes of UTF-8 input per second, as in bench-peers.js; MB/cpu-s is the
// same per CPU-second of the process (getrusage, hence the unix build tag), the steadier
// figure when other jobs share the machine.
//
// Input is split exactly as bench-peers.js's splitChunks does (see benchSplitChunks) and
// each piece is one Encode call, on one goroutine: compare with the peers' figures and
// run with -cpu 1 for single-core figures. ids_hash is FNV-1a over all the ids as
// little-endian uint32, as bench-peers.js computes it: equal hashes, equal ids.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"gptkit/internal/sharedtest"
	"gptkit/internal/testfiles"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
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

var benchTokenizers sync.Map // name -> *tokenize.Tokenizer

// benchTokenizer loads a named tokenizer (gpt2, neox-20b, cl100k_base, o200k_base) once
// per test binary.
func benchTokenizer(b *testing.B, name string) *tokenize.Tokenizer {
	b.Helper()
	if v, ok := benchTokenizers.Load(name); ok {
		return v.(*tokenize.Tokenizer)
	}
	tok, err := spec.Load(context.Background(), name, spec.Options{})
	if err != nil {
		b.Fatalf("load %s: %v", name, err)
	}
	benchTokenizers.Store(name, tok)
	return tok
}

// benchInputs are the inputs of BenchmarkEncode: $BENCH_INPUTS (NAME=PATH,...), else
// tinyshakespeare.
func benchInputs(b *testing.B) (names []string, paths map[string]string) {
	paths = map[string]string{}
	v := os.Getenv("BENCH_INPUTS")
	if v == "" {
		return []string{"shakespeare"}, paths
	}
	for _, kv := range strings.Split(v, ",") {
		name, path, ok := strings.Cut(kv, "=")
		if !ok {
			b.Fatalf("BENCH_INPUTS: %q is not NAME=PATH", kv)
		}
		names, paths[name] = append(names, name), path
	}
	return names, paths
}

// benchInput returns the text of a named input.
func benchInput(b *testing.B, name string, paths map[string]string) string {
	b.Helper()
	if p, ok := paths[name]; ok {
		return string(benchReadFile(b, p, "BENCH_INPUTS names a file that cannot be read"))
	}
	return string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
}

// benchIDsHash is FNV-1a over ids as little-endian uint32, as bench-peers.js's hashIDs.
func benchIDsHash(h uint32, ids []int) uint32 {
	for _, id := range ids {
		v := uint32(id)
		for range 4 {
			h ^= v & 0xff
			h *= 0x01000193
			v >>= 8
		}
	}
	return h
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

// benchTimedPasses runs pass as b's timed loop over bytes bytes a pass, adds MB/cpu-s
// and returns the number of passes.
func benchTimedPasses(b *testing.B, bytes int, pass func()) int {
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	ops, cpu0 := 0, benchCPU()
	for b.Loop() {
		pass()
		ops++
	}
	benchReportCPU(b, cpu0, ops, bytes)
	return ops
}

// benchReport adds tokens/s and tokens/op to b's results.
func benchReport(b *testing.B, ops, tokensPerOp int) {
	if s := b.Elapsed().Seconds(); s > 0 && ops > 0 {
		b.ReportMetric(float64(tokensPerOp)*float64(ops)/s, "tokens/s")
	}
	b.ReportMetric(float64(tokensPerOp), "tokens/op")
}

// BenchmarkEncode: one Encode call per ~1 MB piece (bench-peers.js's pieces), one
// goroutine, for each named tokenizer and input. bytes/op is the whole input.
func BenchmarkEncode(b *testing.B) {
	inputs, paths := benchInputs(b)
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			for _, input := range inputs {
				b.Run(input, func(b *testing.B) {
					tok := benchTokenizer(b, name)
					text := benchInput(b, input, paths)
					pieces := benchSplitChunks(text, benchChunk)
					pass := func() int {
						n := 0
						for _, p := range pieces {
							n += len(tok.Encode(p))
						}
						return n
					}
					hash := uint32(0x811c9dc5)
					tokens := benchWarmPass("encode/"+name+"/"+input, func() int {
						n := 0
						for _, p := range pieces {
							ids := tok.Encode(p)
							n += len(ids)
							hash = benchIDsHash(hash, ids)
						}
						return n
					})
					ops := benchTimedPasses(b, len(text), func() { pass() })
					benchReport(b, ops, tokens)
					b.ReportMetric(float64(len(pieces)), "pieces")
					if hash != 0x811c9dc5 {
						b.ReportMetric(float64(hash), "ids_hash")
					}
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
	shakespeare := string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
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
					ops := benchTimedPasses(b, len(in.text), func() { tok.Encode(in.text) })
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
// reach 2×), and over one text of those 16 MB (cut into parts, encode_batch.go). Run
// with -cpu 2 (or more); the goal is 2 workers ≥ 1.8× one.
func BenchmarkEncodeBatchWorkers(b *testing.B) {
	for _, c := range []struct {
		name    string
		workers int
		one     bool
	}{{"1", 1, false}, {"2", 2, false}, {"one-text/1", 1, true}, {"one-text/2", 2, true}} {
		workers := c.workers
		b.Run(c.name, func(b *testing.B) {
			tok := benchTokenizer(b, "gpt2")
			shakespeare := string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
			const nPieces = 16
			reps := (nPieces+1)*benchChunk/len(shakespeare) + 2
			pieces := benchSplitChunks(strings.Repeat(shakespeare, reps), benchChunk)[:nPieces]
			if c.one {
				pieces = []string{strings.Join(pieces, "")}
			}
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
			tokens := benchWarmPass("batch/"+c.name, pass)
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

// BenchmarkEncodeDocSizes: Encode of tinyshakespeare cut into documents of 256 bytes to 1
// MB (at line ends), one call each, GPT-2, one goroutine: what a call costs beyond its
// bytes (bytes/op is the whole text).
//
//	go test ./tokenize -run '^$' -bench EncodeDocSizes -cpu 1
func BenchmarkEncodeDocSizes(b *testing.B) {
	tok := benchTokenizer(b, "gpt2")
	text := string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
	for _, size := range []int{256, 1 << 10, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			docs := benchSplitChunks(text, size)
			pass := func() int {
				n := 0
				for _, d := range docs {
					n += len(tok.Encode(d))
				}
				return n
			}
			tokens := pass()
			ops := benchTimedPasses(b, len(text), func() { pass() })
			benchReport(b, ops, tokens)
			b.ReportMetric(float64(len(docs)), "docs")
		})
	}
}
