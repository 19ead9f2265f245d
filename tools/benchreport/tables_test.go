package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdvRatio: the worst-case ratio comes from MB per CPU-second when the runs report
// it (a loaded machine stretches wall-clock ns/byte), from ns/byte otherwise.
func TestAdvRatio(t *testing.T) {
	out := `BenchmarkEncodeAdversarial/gpt2/normal-1MB 	100	 1000 ns/op	 250.0 MB/cpu-s	 4.0 ns/byte
BenchmarkEncodeAdversarial/gpt2/no-whitespace-digits 	10	 9000 ns/op	 25.00 MB/cpu-s	 90.0 ns/byte
BenchmarkEncodeAdversarial/neox-20b/normal-1MB 	100	 1000 ns/op	 4.0 ns/byte
BenchmarkEncodeAdversarial/neox-20b/one-char-run 	100	 1000 ns/op	 8.0 ns/byte
`
	g, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tok, in string
		want    float64
	}{{"gpt2", "no-whitespace-digits", 10}, {"neox-20b", "one-char-run", 2}} {
		got, ok := advRatio(g, "BenchmarkEncodeAdversarial/"+c.tok+"/normal-1MB", "BenchmarkEncodeAdversarial/"+c.tok+"/"+c.in)
		if !ok || got != c.want {
			t.Errorf("%s %s: %v %v, want %v", c.tok, c.in, got, ok, c.want)
		}
	}
}

// TestPaired: the rounds of a job are read from their two files, a round missing either
// is left out, and the goal's ratio is the median of the rounds' ratios (not the ratio of
// the medians), the peer's figure the round of median peer speed.
func TestPaired(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	peer := func(mb float64) string {
		return fmt.Sprintf(`{"host":{"cpus":2},"results":[{"tool":"tiktoken-rs","model":"gpt2","file":"/x/english.txt","tokens":5,"ids_hash":"0000abcd","MB_per_cpu_s":%g}]}`, mb)
	}
	ours := func(mb float64) string {
		return fmt.Sprintf("cpu: Test CPU\nBenchmarkEncode/gpt2/english 	3	 1000 ns/op	 %g MB/cpu-s	 5 tokens/op\n", mb)
	}
	// Round ratios 30, 20, 36: median 30. (Medians of each side, 300/10, would say 30 too;
	// round 2 alone would say 20.)
	write("r1-gpt2-english.json", peer(10))
	write("r1-gpt2-english.txt", ours(300))
	write("r2-gpt2-english.json", peer(12))
	write("r2-gpt2-english.txt", ours(240))
	write("r3-gpt2-english.json", peer(8))
	write("r3-gpt2-english.txt", ours(288))
	write("r4-gpt2-english.json", peer(9))               // no .txt: left out
	write("r1-cl100k_base-mixed.json", `{"results":[]}`) // the peer failed: left out
	write("r1-cl100k_base-mixed.txt", ours(100))
	runs, err := readPaired(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs["gpt2/english"] == nil {
		t.Fatalf("jobs %v, want gpt2/english only", runs)
	}
	pr := runs["gpt2/english"]
	if len(pr.rounds) != 3 || pr.rounds[0].round != 1 || pr.rounds[2].round != 3 {
		t.Fatalf("rounds %+v", pr.rounds)
	}
	if got := pr.ratio(); got != 30 {
		t.Errorf("ratio %v, want 30", got)
	}
	if got := pr.peerMedian().MBPerCPU; got != 10 {
		t.Errorf("peer's median %v, want 10", got)
	}
	if runs, err := readPaired(filepath.Join(dir, "none")); err != nil || len(runs) != 0 {
		t.Errorf("missing directory: %v %v", runs, err)
	}
}

// TestCommandLineFloor: the command line's table shows each command's floor, its
// overhead beyond it and against the library's first call, says which commands' floors
// are over the goal, and shows "—" for a run of the benchmark without them.
func TestCommandLineFloor(t *testing.T) {
	out := `BenchmarkCLIVsLibrary/encode-2 	6	 1 ns/op	 100 MB	 6.2 beyond_floor_pct	 0.75 cli_cpu_s	 -6.1 first_overhead_pct	 10.1 floor_pct	 0.63 lib_cpu_s	 16.3 overhead_pct
BenchmarkCLIVsLibrary/encode-jsonl-2 	6	 1 ns/op	 100 MB	 7.4 beyond_floor_pct	 0.82 cli_cpu_s	 -10.5 first_overhead_pct	 16.1 floor_pct	 0.72 lib_cpu_s	 23.4 overhead_pct
BenchmarkCLIVsLibrary/run-2 	6	 1 ns/op	 100 MB	 0.86 cli_cpu_s	 0.66 lib_cpu_s	 31.1 overhead_pct
`
	g, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var r report
	commandLine(&r, g)
	got := r.w.String()
	for _, want := range []string{
		"| `tokenize encode` (one text) | 100 | 0.75 | 0.63 | +16% FAIL | 10% | +6% | -6% |",
		"| `tokenize encode --jsonl` | 100 | 0.82 | 0.72 | +23% FAIL | 16% | +7% | -10% |",
		"| `tokenize run` (.jsonl to a directory) | 100 | 0.86 | 0.66 | +31% FAIL | — | — | — |",
		"is over the goal for `tokenize encode --jsonl`: no implementation",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}
