package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"gptkit/internal/testfiles"
	"gptkit/prep"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// Tests and benchmarks of the tokenize command as a process of its own: its peak memory
// and its CPU time against the library's.

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// buildCLI builds this command once per test binary and returns the executable's path.
func buildCLI(tb testing.TB) string {
	tb.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tokenize-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "tokenize")
		out, err := exec.Command("go", "build", "-o", cliPath, ".").CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		tb.Fatal(cliErr)
	}
	return cliPath
}

// processRun is what a finished child process used.
type processRun struct {
	cpu    time.Duration // user + system
	maxRSS int64         // bytes
	stdout []byte
}

// runCLI runs the command with args, stdin from the file in (or nothing), stdout kept
// only if keep, and fails tb unless it exits 0.
func runCLI(tb testing.TB, in string, keep bool, args ...string) processRun {
	tb.Helper()
	cmd := exec.Command(buildCLI(tb), args...)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stdout, stderr bytes.Buffer
	if keep {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("tokenize %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return processRun{
		cpu:    cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		maxRSS: ru.Maxrss << 10, // KiB on Linux
		stdout: stdout.Bytes(),
	}
}

// wikiish returns n bytes of made-up text with as many tokens per byte as enwik8 (~0.4
// with GPT-2): words, [[links|numbers]], {{templates}} with dates, newlines.
func wikiish(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the of and to in a is that for it as was with be by on not he I this are or his from at which but have")
	word := func() string { return words[rng.IntN(len(words))] }
	var sb strings.Builder
	sb.Grow(n + 100)
	for sb.Len() < n {
		switch rng.IntN(6) {
		case 0:
			fmt.Fprintf(&sb, "[[%s %s|%d]] ", word(), word(), rng.IntN(100000))
		case 1:
			fmt.Fprintf(&sb, "{{cite %d-%02d-%02d}}\n", 1900+rng.IntN(120), 1+rng.IntN(12), 1+rng.IntN(28))
		default:
			sb.WriteString(word() + " ")
		}
	}
	return sb.String()[:n]
}

// writeJSONL writes texts as JSONL, one {"text": ...} object per line, to path.
func writeJSONL(tb testing.TB, path string, texts []string) {
	tb.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, t := range texts {
		if err := enc.Encode(map[string]string{"text": t}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestRunPeakRSSOneHugeDocument: `tokenize run` on one 100 MB document (as enwik8 is;
// 42.6M GPT-2 tokens) peaks below 1 GiB resident (getrusage's maxrss of the process).
// Holding the document's ids as a growing []int next to its JSON line and its text, it
// peaked at 2.3 GiB.
//
// Linux counts in a child's maxrss the resident size of the process that started it, as
// it was when the child was exec'd (Go starts children with vfork, sharing the parent's
// memory until exec), so this test first gives its own memory back: with the 100 MB
// input and its JSON still resident, or the collector off, the figure was the test's.
func TestRunPeakRSSOneHugeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and tokenizes 100 MB")
	}
	spec := testfiles.Path(t, "tokenizers/gpt2")
	dir := t.TempDir()
	in := filepath.Join(dir, "huge.jsonl")
	writeJSONL(t, in, []string{wikiish(100<<20, 1)})
	debug.FreeOSMemory()
	self := selfRSS(t)
	r := runCLI(t, "", false, "run", "--input", in, "--output", filepath.Join(dir, "out"), "--name", "huge",
		"--tokenizer", spec, "--progress", "off")
	t.Logf("peak RSS %d MiB (this test's own when it started the command: %d MiB), CPU %v", r.maxRSS>>20, self>>20, r.cpu.Round(time.Millisecond))
	if self >= 256<<20 {
		t.Fatalf("the test itself holds %d MiB resident: the child's maxrss would measure it", self>>20)
	}
	if r.maxRSS >= 1<<30 {
		t.Errorf("peak RSS %d MiB, want under 1024 MiB", r.maxRSS>>20)
	}
}

// selfRSS returns this process's resident size (VmRSS in /proc/self/status).
func selfRSS(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status:", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkLoadProcess: `tokenize encode --tokenizer NAME` of an empty input, as a fresh
// process, for each named tokenizer: the whole process's CPU time (goal < 50 ms) and
// the tokenizer's load time inside it (tokenize/spec.Load of the compiled form, goal
// < 30 ms; BenchmarkLoadInProcess in tokenize/spec measures it alone). Medians over
// b.N runs.
//
//	go test ./cmd/tokenize -run '^$' -bench LoadProcess -benchtime 10x
func BenchmarkLoadProcess(b *testing.B) {
	empty := filepath.Join(b.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base", "char"} {
		b.Run(name, func(b *testing.B) {
			buildCLI(b)
			var cpus, walls []float64
			for b.Loop() {
				t0 := time.Now()
				r := runCLI(b, empty, false, "encode", "--tokenizer", name, "--progress", "off")
				walls = append(walls, float64(time.Since(t0).Microseconds())/1e3)
				cpus = append(cpus, float64(r.cpu.Microseconds())/1e3)
			}
			b.ReportMetric(median(cpus), "cpu_ms")
			b.ReportMetric(median(walls), "wall_ms")
		})
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCLIVsLibrary: the CPU time of the tokenize command on $BENCH_CLI_MB (default
// 100) MB of text against the library's EncodeBatch on the same texts (all cores both),
// output formatting, reading, loading and GC included: `tokenize encode` of the text as
// one input, `tokenize encode --jsonl` and `tokenize run` of it as 4 KB JSONL
// documents. overhead_pct is 100 × (command CPU / library CPU − 1), goal ≤ 15. The text
// is $BENCH_CLI_CORPUS repeated to size (default tinyshakespeare); the tokenizer
// $BENCH_CLI_TOKENIZER (default gpt2), by name.
//
// The library runs in this process, warm from the rounds before (a round before the
// counted ones warms it: its caches filled from the same text, the memory of the last
// round's ids reused), and the command always cold; so each round also times the
// library's first EncodeBatch in a fresh process (libraryFirstCall, tokenizer loaded and
// texts in memory before the clock starts): lib_first_cpu_s, and first_overhead_pct the
// command's CPU against it. The three go in one order in even rounds and the reverse in
// odd ones. Each figure is the median of the rounds' (the overheads: of each round's
// ratio). floor_pct is the least overhead the mode could have, the work it must do that
// EncodeBatch does not, timed alone in this process (commandFloor: the ids' text, the
// JSON strings' decoding, the .bin's sha256, each also as floor_*_pct), and
// beyond_floor_pct the overhead less it.
//
//	go test ./cmd/tokenize -run '^$' -bench CLIVsLibrary -benchtime 6x
func BenchmarkCLIVsLibrary(b *testing.B) {
	mb := 100
	if v, err := strconv.Atoi(os.Getenv("BENCH_CLI_MB")); err == nil && v > 0 {
		mb = v
	}
	name := cmp.Or(os.Getenv("BENCH_CLI_TOKENIZER"), "gpt2")
	var src []byte
	if p := os.Getenv("BENCH_CLI_CORPUS"); p != "" {
		var err error
		if src, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		src = testfiles.Read(b, "corpora/tinyshakespeare.txt")
	}
	text := strings.Repeat(string(src), (mb<<20)/len(src)+1)[:mb<<20]
	for !utf8.ValidString(text) {
		text = text[:len(text)-1]
	}
	var docs []string // 4 KB documents, cut at a line end when there is one
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
	dir := b.TempDir()
	txt, jsonl := filepath.Join(dir, "text.txt"), filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(txt, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	writeJSONL(b, jsonl, docs)
	textsOne, textsDocs := filepath.Join(dir, "text.texts"), filepath.Join(dir, "docs.texts")
	writeTexts(b, textsOne, []string{text})
	writeTexts(b, textsDocs, docs)
	tok, err := spec.Load(context.Background(), name, spec.Options{})
	if err != nil {
		b.Fatal(err)
	}
	library := func(texts []string) time.Duration {
		runtime.GC()
		c0 := processCPU()
		ids := tok.EncodeBatch(texts, libraryWorkers(texts))
		runtime.KeepAlive(ids)
		return processCPU() - c0
	}
	for _, tc := range []struct {
		mode     string
		texts    []string
		textFile string // the texts for libraryFirstCall
		in       string
		args     []string
	}{
		{"encode", []string{text}, textsOne, txt, []string{"encode", "--tokenizer", name}},
		{"encode-jsonl", docs, textsDocs, jsonl, []string{"encode", "--tokenizer", name, "--jsonl"}},
		{"run", docs, textsDocs, "", []string{"run", "--input", jsonl, "--name", "bench", "--tokenizer", name}},
	} {
		b.Run(tc.mode, func(b *testing.B) {
			buildCLI(b)
			var runOut string // the last round's output directory (run)
			// round times the command, the warm library and the library's first call,
			// in one order in even rounds and the reverse in odd ones: the second of a
			// pair runs after the first's work (its written files' writeback, say),
			// which moved a pair of commands by a few percent (tools/ab_cpu.py).
			round := func(i int) (cli, lib, first time.Duration) {
				args := append(slices.Clone(tc.args), "--progress", "off")
				if tc.mode == "run" {
					runOut = filepath.Join(b.TempDir(), "out")
					args = append(args, "--output", runOut)
				}
				steps := []func(){
					func() { cli = runCLI(b, tc.in, false, args...).cpu },
					func() { lib = library(tc.texts) },
					func() { first = libraryFirstCall(b, tc.textFile, name) },
				}
				if i%2 == 1 {
					slices.Reverse(steps)
				}
				for _, step := range steps {
					step()
				}
				return cli, lib, first
			}
			// One round before the counted ones: in it the library is not warm (its
			// first EncodeBatch in this process took 1.47 s of CPU where the next took
			// 0.52-0.59, session s40), which as one round of six in a sum moved the
			// overhead by up to twenty points (one run read −0.6% where others read
			// +21%).
			round(1)
			var clis, libs, firsts, over, overFirst []float64
			for i := 0; b.Loop(); i++ {
				cli, lib, first := round(i)
				clis, libs, firsts = append(clis, cli.Seconds()), append(libs, lib.Seconds()), append(firsts, first.Seconds())
				over = append(over, 100*(cli.Seconds()/lib.Seconds()-1))
				overFirst = append(overFirst, 100*(cli.Seconds()/first.Seconds()-1))
			}
			// Medians of the rounds, the overheads of each round's own pair: one
			// command run in eight took a third more CPU than the others (user and
			// system time both; the VM's, not the command's).
			b.ReportMetric(median(clis), "cli_cpu_s")
			b.ReportMetric(median(libs), "lib_cpu_s")
			b.ReportMetric(median(firsts), "lib_first_cpu_s")
			b.ReportMetric(median(over), "overhead_pct")
			b.ReportMetric(median(overFirst), "first_overhead_pct")
			// The least the command could take beyond the library, in percent of the
			// library's CPU (commandFloor), and what its overhead is beyond that.
			idText, jsonText, binSum := commandFloor(b, tok, tc.mode, tc.texts, jsonl, runOut)
			pct := func(d time.Duration) float64 { return 100 * d.Seconds() / median(libs) }
			floorPct := pct(idText + jsonText + binSum)
			b.ReportMetric(pct(idText), "floor_idtext_pct")
			b.ReportMetric(pct(jsonText), "floor_json_pct")
			b.ReportMetric(pct(binSum), "floor_sha256_pct")
			b.ReportMetric(floorPct, "floor_pct")
			b.ReportMetric(median(over)-floorPct, "beyond_floor_pct")
			b.ReportMetric(float64(len(text))/1e6, "MB")
		})
	}
}

// commandFloor times, in this process and warm (the second of two passes), the work a
// mode of the command must do that EncodeBatch does not, each part in its fastest form
// here, one goroutine: the ids' text (encode, encode --jsonl: appendArray into one
// buffer), decoding the JSON strings of the lines (encode --jsonl, run:
// prep.AppendTextField into one buffer), and the sha256 of the .bin that the manifest
// records (run, the contract's bin_sha256: of the file the last round wrote, read into
// memory first). Reading the input, writing the output, packing the ids and the memory
// the command faults in are not in it. 100 × its sum / library CPU is the least
// overhead the command could have (floor_pct): where it is over 15, so is the command.
func commandFloor(b *testing.B, tok *tokenize.Tokenizer, mode string, texts []string, jsonl, runOut string) (idText, jsonText, binSum time.Duration) {
	b.Helper()
	ids := tok.EncodeBatch(texts, libraryWorkers(texts))
	var lines [][]byte
	if mode != "encode" {
		data, err := os.ReadFile(jsonl)
		if err != nil {
			b.Fatal(err)
		}
		lines = bytes.SplitAfter(data, []byte("\n"))
	}
	var bin []byte
	if mode == "run" {
		bins, err := filepath.Glob(filepath.Join(runOut, "*.bin"))
		if err != nil || len(bins) == 0 {
			b.Fatalf("run's output %s: no .bin (%v)", runOut, err)
		}
		for _, p := range bins {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			bin = append(bin, data...)
		}
	}
	format := newIDText(tok.VocabSize())
	var buf []byte
	timed := func(work func()) time.Duration {
		runtime.GC()
		c0 := processCPU()
		work()
		return processCPU() - c0
	}
	for range 2 {
		if mode != "run" {
			idText = timed(func() {
				for _, doc := range ids {
					buf = format.appendArray(buf[:0], doc)
				}
			})
		}
		jsonText = timed(func() {
			for _, line := range lines {
				if len(line) == 0 {
					continue
				}
				var err error
				if buf, _, _, err = prep.AppendTextField(buf[:0], line, "text"); err != nil {
					b.Fatal(err)
				}
			}
		})
		if bin != nil {
			binSum = timed(func() { sha256.Sum256(bin) })
		}
	}
	return idText, jsonText, binSum
}

// processCPU is this process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
