package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/testfiles"
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
func TestRunPeakRSSOneHugeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and tokenizes 100 MB")
	}
	spec := testfiles.Path(t, "tokenizers/gpt2")
	dir := t.TempDir()
	in := filepath.Join(dir, "huge.jsonl")
	writeJSONL(t, in, []string{wikiish(100<<20, 1)})
	r := runCLI(t, "", false, "run", "--input", in, "--output", filepath.Join(dir, "out"), "--name", "huge",
		"--tokenizer", spec, "--progress", "off")
	t.Logf("peak RSS %d MiB, CPU %v", r.maxRSS>>20, r.cpu.Round(time.Millisecond))
	if r.maxRSS >= 1<<30 {
		t.Errorf("peak RSS %d MiB, want under 1024 MiB", r.maxRSS>>20)
	}
}
