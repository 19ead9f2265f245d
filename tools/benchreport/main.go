// Command benchreport turns one `make bench` run (tools/bench.sh) into a markdown table of
// the tokenizer's speed goals: our `go test -bench` output next to the peers' JSON
// (tools/bench-peers.js --json) measured in the same run.
//
//	benchreport -gobench a.txt,b.txt -peers peers.json -inputs english=FILE,mixed=FILE,... \
//	    [-paired DIR] [-cmd TEXT] [-note TEXT] [-go-version TEXT] [-loadavg-start TEXT] [-out report.md]
//
// The table goes to stdout and to -out. With BENCH_STRICT=1 the exit status is 1 when a
// goal FAILs or was not measured; otherwise it is 0 whatever the figures (2 on bad usage,
// 1 when an input cannot be read).
//
// Goals (issue 20), all per CPU-second on one core unless said:
//   - GPT-2 and cl100k_base: ≥ 30× native tiktoken-rs on English (tinyshakespeare
//     repeated), ≥ 10× on the mixed corpus, judged on paired rounds (-paired, paired.go)
//     where there are some; GPT-2 (and NeoX-20B): ≥ 100× HF tokenizers;
//     the same ids (token count and ids hash) as every peer;
//   - adversarial 1 MB inputs: ns/byte ≤ 5× that of normal-1MB (same tokenizer);
//   - loading a named tokenizer < 30 ms; `tokenize encode` of an empty input < 50 ms of
//     CPU, the whole process;
//   - the command line (tokenize encode, encode --jsonl, run) ≤ 15% more CPU than
//     EncodeBatch on the same 100 MB;
//   - tokenize run end to end on the machine's cores ≥ 90% of tokenizer-only speed, for
//     .jsonl, .jsonl.zst and .jsonl.gz of the mixed corpus;
//   - EncodeBatch: 2 workers ≥ 1.8× one.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	goalRSEnglish = 30.0
	goalRSMixed   = 10.0
	goalHF        = 100.0
	goalAdvRatio  = 5.0
	goalLoadMS    = 30.0
	goalProcMS    = 50.0
	goalCLIPct    = 15.0
	goalE2EPct    = 90.0
	goalSpeedup   = 1.8
)

// peerResult is one job of tools/bench-peers.js.
type peerResult struct {
	Tool      string  `json:"tool"`
	Model     string  `json:"model"`
	File      string  `json:"file"`
	Bytes     int64   `json:"bytes"`
	Tokens    int64   `json:"tokens"`
	IDsHash   string  `json:"ids_hash"`
	MBPerCPU  float64 `json:"MB_per_cpu_s"`
	MBPerWall float64 `json:"MB_per_s"`
}

type peers struct {
	Host struct {
		CPUs int    `json:"cpus"`
		CPU  string `json:"cpu"`
		Node string `json:"node"`
	} `json:"host"`
	Results []peerResult `json:"results"`
}

func (p *peers) find(tool, model, file string) *peerResult {
	for i := range p.Results {
		r := &p.Results[i]
		if r.Tool == tool && r.Model == model && samePath(r.File, file) {
			return r
		}
	}
	return nil
}

func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if a == b {
		return true
	}
	ai, err1 := os.Stat(a)
	bi, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ai, bi)
}

// report accumulates the markdown and the goal checks that failed.
type report struct {
	w        strings.Builder
	failures []string
}

func (r *report) printf(format string, a ...any) { fmt.Fprintf(&r.w, format, a...) }

// check returns "PASS", "FAIL" or "not measured" for a goal, recording failures.
func (r *report) check(what string, ok, measured bool) string {
	switch {
	case !measured:
		r.failures = append(r.failures, what+": not measured")
		return "not measured"
	case ok:
		return "PASS"
	}
	r.failures = append(r.failures, what)
	return "FAIL"
}

func f1(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func main() {
	gobench := flag.String("gobench", "", "comma-separated `files` of go test -bench output")
	peersFile := flag.String("peers", "", "bench-peers.js --json `file`")
	inputs := flag.String("inputs", "", "NAME=FILE,... the inputs both sides encoded (english, mixed, english-hf, mixed-hf)")
	cmd := flag.String("cmd", "", "the commands of the run, for the report")
	note := flag.String("note", "", "a note for the report")
	goVersion := flag.String("go-version", "", "go version")
	loadStart := flag.String("loadavg-start", "", "loadavg before the run")
	out := flag.String("out", "", "also write the report to `file`")
	pairedDir := flag.String("paired", "", "the `directory` of the paired rounds against tiktoken-rs (tools/bench.sh)")
	flag.Parse()
	if *gobench == "" || *peersFile == "" || *inputs == "" {
		fmt.Fprintln(os.Stderr, "usage: benchreport -gobench FILES -peers FILE -inputs NAME=FILE,... [-out FILE]")
		os.Exit(2)
	}
	g := &goBench{runs: map[string][]run{}, failed: map[string][]string{}, skip: map[string][]string{}}
	for _, f := range strings.Split(*gobench, ",") {
		fh, err := os.Open(f)
		if err != nil {
			fatal(err)
		}
		one, err := parseGoBench(fh)
		fh.Close()
		if err != nil {
			fatal(fmt.Errorf("%s: %w", f, err))
		}
		g.merge(one)
	}
	var p peers
	data, err := os.ReadFile(*peersFile)
	if err != nil {
		fatal(err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		fatal(fmt.Errorf("%s: %w", *peersFile, err))
	}
	files := map[string]string{}
	for _, kv := range strings.Split(*inputs, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			files[k] = v
		}
	}

	paired, err := readPaired(*pairedDir)
	if err != nil {
		fatal(err)
	}

	r := &report{}
	r.printf("# Tokenizer performance (make bench)\n\n")
	r.printf("%s, %s; %s; node %s; %s. Loadavg at the start %s. %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		cpuModel(g.cpu), *goVersion, p.Host.Node, fmt.Sprintf("%d CPUs", p.Host.CPUs), orDash(*loadStart), busyNote(*loadStart))
	if *note != "" {
		r.printf("%s\n\n", *note)
	}
	throughput(r, g, &p, files, paired)
	adversarial(r, g)
	loading(r, g)
	commandLine(r, g)
	endToEnd(r, g)
	decompression(r, g)
	r.printf("\n```\n%s\n```\n", *cmd)
	if len(r.failures) > 0 {
		r.printf("\nGoals not met or not measured: %s.\n", strings.Join(r.failures, "; "))
	}
	fmt.Print(r.w.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(r.w.String()), 0o644); err != nil {
			fatal(err)
		}
	}
	if len(r.failures) > 0 && os.Getenv("BENCH_STRICT") == "1" {
		fmt.Fprintf(os.Stderr, "benchreport: %d goal check(s) failed (BENCH_STRICT=1)\n", len(r.failures))
		os.Exit(1)
	}
}
