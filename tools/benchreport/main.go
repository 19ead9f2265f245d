// Command benchreport turns one `make bench` run (tools/bench.sh) into a markdown table of
// the speed goals: our `go test -bench` output next to the peers' JSON (bench-peers.js
// --json) measured in the same run.
//
//	benchreport -gobench go-bench.txt -peers peers.json -corpus FILE -shakespeare FILE \
//	    [-corpus-note TEXT] [-cmd TEXT] [-go-version TEXT] [-loadavg-start TEXT] [-out report.md]
//
// The table goes to stdout and to -out. With BENCH_STRICT=1 the exit status is 1 when a
// goal FAILs or was not measured; otherwise it is 0 whatever the figures (2 on bad usage,
// 1 when an input cannot be read).
//
// Goals (from the issue):
//   - single core, 1 MB pieces (peers' "chunks" mode), on the corpus: ≥10× HF tokenizers'
//     MB/s and ≥3× tiktoken-WASM gpt2's MB/s, for GPT-2 and NeoX-20B alike (tinyshakespeare
//     rows are shown for information);
//   - adversarial 1 MB inputs: ns/byte ≤5× that of normal-1MB (same tokenizer);
//   - EncodeBatch: 2 workers ≥1.8× one;
//   - loading GPT-2 or NeoX-20B (file read included): <150 ms.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	goalHF        = 10.0
	goalTiktoken  = 3.0
	goalAdvRatio  = 5.0
	goalSpeedup   = 1.8
	goalLoadMilli = 150.0
)

// run is one line of `go test -bench` output.
type run struct {
	procs   int
	iters   int
	metrics map[string]float64 // unit -> value ("ns/op", "MB/s", "tokens/s", ...)
}

type goBench struct {
	runs   map[string][]run    // name without the -procs suffix
	failed map[string][]string // name -> messages (--- FAIL)
	skip   map[string][]string // name -> messages (--- SKIP)
	cpu    string
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)
	procsSfx  = regexp.MustCompile(`-(\d+)$`)
)

func splitProcs(name string) (string, int) {
	if m := procsSfx.FindStringSubmatch(name); m != nil {
		p, _ := strconv.Atoi(m[1])
		return strings.TrimSuffix(name, m[0]), p
	}
	return name, 1
}

func parseGoBench(r io.Reader) (*goBench, error) {
	g := &goBench{runs: map[string][]run{}, failed: map[string][]string{}, skip: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur map[string][]string // where indented lines after --- FAIL/SKIP go
	var curName string
	for sc.Scan() {
		line := sc.Text()
		if cur != nil && strings.HasPrefix(line, "    ") {
			cur[curName] = append(cur[curName], strings.TrimSpace(line))
			continue
		}
		cur = nil
		if s, ok := strings.CutPrefix(line, "cpu: "); ok {
			g.cpu = s
			continue
		}
		if s, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
			cur = g.failed
			curName, _ = splitProcs(strings.Fields(s + " x")[0])
			cur[curName] = append(cur[curName], []string{}...)
			continue
		}
		if s, ok := strings.CutPrefix(line, "--- SKIP: "); ok {
			cur = g.skip
			curName, _ = splitProcs(strings.Fields(s + " x")[0])
			cur[curName] = append(cur[curName], []string{}...)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, procs := splitProcs(m[1])
		iters, _ := strconv.Atoi(m[2])
		f := strings.Fields(m[3])
		rn := run{procs: procs, iters: iters, metrics: map[string]float64{}}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bad value %q in %q", f[i], line)
			}
			rn.metrics[f[i+1]] = v
		}
		g.runs[name] = append(g.runs[name], rn)
	}
	return g, sc.Err()
}

// median of metric unit over the runs of name, with min, max and count; ok false if none.
func (g *goBench) stat(name, unit string) (med, lo, hi float64, n int, ok bool) {
	var xs []float64
	for _, r := range g.runs[name] {
		if v, ok := r.metrics[unit]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, 0, 0, 0, false
	}
	slices.Sort(xs)
	med = xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return med, xs[0], xs[len(xs)-1], len(xs), true
}

func (g *goBench) median(name, unit string) (float64, bool) {
	m, _, _, _, ok := g.stat(name, unit)
	return m, ok
}

// why says why name has no figures: its failure or skip message, or "not run".
func (g *goBench) why(name string) string {
	for n := name; n != ""; n = n[:max(strings.LastIndexByte(n, '/'), 0)] {
		if m, ok := g.failed[n]; ok {
			return "FAILED: " + firstOr(m, "see go-bench output")
		}
		if m, ok := g.skip[n]; ok {
			return "skipped: " + firstOr(m, "")
		}
	}
	return "not run"
}

func firstOr(xs []string, d string) string {
	if len(xs) > 0 {
		// drop the "file.go:123: " prefix of t.Log lines
		if i := strings.Index(xs[0], ".go:"); i >= 0 {
			if j := strings.Index(xs[0][i:], ": "); j >= 0 {
				return xs[0][i+j+2:]
			}
		}
		return xs[0]
	}
	return d
}

type peerResult struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	Tool           string    `json:"tool"`
	Model          string    `json:"model"`
	Mode           string    `json:"mode"`
	Bytes          int64     `json:"bytes"`
	Pieces         int       `json:"pieces"`
	Tokens         int64     `json:"tokens"`
	LoadS          float64   `json:"load_s"`
	ColdMBps       float64   `json:"cold_MBps"`
	SteadyMBps     float64   `json:"steady_MBps"`
	SteadyMtok     float64   `json:"steady_Mtok_per_s"`
	CPUPerWall     float64   `json:"cpu_per_wall"`
	SteadyMBPerCPU float64   `json:"steady_MB_per_cpu_s"`
	RunsS          []float64 `json:"runs_s"`
	Loadavg        []float64 `json:"loadavg_1m"`
}

type peers struct {
	Host struct {
		CPUs int    `json:"cpus"`
		CPU  string `json:"cpu"`
		Node string `json:"node"`
	} `json:"host"`
	Results []peerResult `json:"results"`
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

func (p *peers) find(name, file string) *peerResult {
	if p == nil {
		return nil
	}
	for i := range p.Results {
		if p.Results[i].Name == name && samePath(p.Results[i].File, file) {
			return &p.Results[i]
		}
	}
	return nil
}

// report accumulates the markdown and the goal checks that failed.
type report struct {
	w        strings.Builder
	failures []string
}

func (r *report) printf(format string, a ...any) { fmt.Fprintf(&r.w, format, a...) }

// check records a goal result and returns the table cell for it; gate false marks rows
// shown for information only (verdict in parentheses, never a failure).
func (r *report) check(what string, ok, measured, gate bool) string {
	switch {
	case !measured:
		if gate {
			r.failures = append(r.failures, what+": not measured")
			return "**MISSING**"
		}
		return "n/a"
	case ok && gate:
		return "PASS"
	case ok:
		return "(pass)"
	case gate:
		r.failures = append(r.failures, what)
		return "**FAIL**"
	default:
		return "(fail)"
	}
}

func f2(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

func spread(g *goBench, name, unit string) string {
	med, lo, hi, n, ok := g.stat(name, unit)
	if !ok {
		return "—"
	}
	if n == 1 {
		return f2(med)
	}
	return fmt.Sprintf("%s (%s–%s, n=%d)", f2(med), f2(lo), f2(hi), n)
}

func main() {
	var (
		goPath      = flag.String("gobench", "", "`files`: go test -bench output (text), comma-separated")
		peersPath   = flag.String("peers", "", "bench-peers.js --json output")
		corpus      = flag.String("corpus", "", "the corpus file both sides encoded (BENCH_CORPUS)")
		shakespeare = flag.String("shakespeare", "", "the tinyshakespeare file both sides encoded")
		corpusNote  = flag.String("corpus-note", "", "how the corpus was made (shown in the report)")
		peersNote   = flag.String("peers-note", "", "a note on the peers' figures (e.g. reused from an earlier run)")
		cmd         = flag.String("cmd", "", "the commands that produced the figures (shown in the report)")
		goVersion   = flag.String("go-version", runtime.Version(), "the go version `line` of the benchmarked toolchain")
		loadStart   = flag.String("loadavg-start", "", "/proc/loadavg when the run began")
		out         = flag.String("out", "", "also write the report to this file")
	)
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchreport -gobench FILE -peers FILE -corpus FILE -shakespeare FILE [flags]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *goPath == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	g := &goBench{runs: map[string][]run{}, failed: map[string][]string{}, skip: map[string][]string{}}
	for _, p := range strings.Split(*goPath, ",") {
		f, err := os.Open(p)
		if err != nil {
			fatal(err)
		}
		one, err := parseGoBench(f)
		f.Close()
		if err != nil {
			fatal(fmt.Errorf("%s: %w", p, err))
		}
		for k, v := range one.runs {
			g.runs[k] = append(g.runs[k], v...)
		}
		for k, v := range one.failed {
			g.failed[k] = append(g.failed[k], v...)
		}
		for k, v := range one.skip {
			g.skip[k] = append(g.skip[k], v...)
		}
		if one.cpu != "" {
			g.cpu = one.cpu
		}
	}
	var pr *peers
	if *peersPath != "" {
		data, err := os.ReadFile(*peersPath)
		if err != nil {
			fatal(err)
		}
		pr = new(peers)
		if err := json.Unmarshal(data, pr); err != nil {
			fatal(fmt.Errorf("%s: %w", *peersPath, err))
		}
	}

	r := &report{}
	r.printf("# Tokenizer speed goals\n\n")
	when := "measured in the same run"
	if *peersNote != "" {
		when = "see the note"
	}
	r.printf("%s — `make bench` (tools/bench.sh). MB = 10^6 bytes of UTF-8 input; ours = median of the `-count` runs (min–max); peers = median of their passes after a cold one, %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), when)
	if *peersNote != "" {
		r.printf("> **Note:** %s\n\n", *peersNote)
	}
	if busy := busyNote(*loadStart); busy != "" {
		r.printf("> **Note:** %s\n\n", busy)
	}

	// 1. Throughput.
	r.printf("## Single core, ~1 MB pieces (one Encode call each)\n\n")
	r.printf("Goal: ≥%.0f× HF tokenizers and ≥%.0f× tiktoken-WASM gpt2 on the corpus (tiktoken has only gpt2: both our tokenizers are compared with it). "+
		"Each ratio is given on wall-clock MB/s and per CPU-second of the process (getrusage for ours, process.cpuUsage for the peers); "+
		"the verdict takes the smaller, so a peer starved of CPU on a shared machine cannot make a PASS. tinyshakespeare rows are for information (verdicts in parentheses).\n\n", goalHF, goalTiktoken)
	r.printf("| tokenizer | input | ours MB/s | ours Mtok/s | HF MB/s | tiktoken gpt2 MB/s | ours/HF wall · CPU | ≥%.0f× | ours/tiktoken wall · CPU | ≥%.0f× | tokens: ours vs HF |\n", goalHF, goalTiktoken)
	r.printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	inputs := []struct{ key, label, file string }{
		{"corpus", "corpus", *corpus},
		{"shakespeare", "tinyshakespeare", *shakespeare},
	}
	models := []struct{ key, label string }{{"gpt2", "GPT-2"}, {"neox-20b", "NeoX-20B"}}
	var notes []string
	// ratio of ours to a peer on wall MB/s and per CPU-s; ok false if the wall one is missing.
	ratio := func(name string, p *peerResult) (cell string, conservative float64, ok bool) {
		ours, okOurs := g.median(name, "MB/s")
		if !okOurs || p == nil || p.SteadyMBps <= 0 {
			return "—", 0, false
		}
		wall := ours / p.SteadyMBps
		cell, conservative = f2(wall)+"×", wall
		if c, ok := g.median(name, "MB/cpu-s"); ok && p.SteadyMBPerCPU > 0 {
			cpu := c / p.SteadyMBPerCPU
			cell += " · " + f2(cpu) + "×"
			conservative = min(conservative, cpu)
		}
		return cell, conservative, true
	}
	for _, model := range models {
		for _, in := range inputs {
			name := "BenchmarkEncode/" + model.key + "/" + in.key
			gate := in.key == "corpus"
			hf := pr.find("hf-"+model.key+"-chunks", in.file)
			tk := pr.find("tiktoken-gpt2-chunks", in.file)
			oursCell := spread(g, name, "MB/s")
			if _, ok := g.median(name, "MB/s"); !ok {
				oursCell = g.why(name)
			}
			mtok := "—"
			if v, ok := g.median(name, "tokens/s"); ok {
				mtok = f2(v / 1e6)
			}
			hfCell, tkCell := "—", "—"
			if hf != nil {
				hfCell = f2(hf.SteadyMBps)
			} else if pr != nil {
				notes = append(notes, fmt.Sprintf("%s %s: no HF result in the peers' JSON (did bench-peers.js fail? see peers.log).", model.label, in.label))
			}
			if tk != nil {
				tkCell = f2(tk.SteadyMBps)
			}
			rHF, vHF, okHF := ratio(name, hf)
			rTK, vTK, okTK := ratio(name, tk)
			tokCell := "—"
			if t, ok := g.median(name, "tokens/op"); ok && hf != nil {
				if int64(t) == hf.Tokens {
					tokCell = fmt.Sprintf("%d = HF", hf.Tokens)
				} else {
					tokCell = fmt.Sprintf("**%d vs %d**", int64(t), hf.Tokens)
					notes = append(notes, fmt.Sprintf("%s %s: our token count %d differs from HF's %d: the ids differ somewhere (or the inputs do).", model.label, in.label, int64(t), hf.Tokens))
				}
			}
			if p, ok := g.median(name, "pieces"); ok && hf != nil && int(p) != hf.Pieces {
				notes = append(notes, fmt.Sprintf("%s %s: we split into %d pieces, the peers into %d.", model.label, in.label, int(p), hf.Pieces))
			}
			if w, ok1 := g.median(name, "MB/s"); ok1 {
				if c, ok2 := g.median(name, "MB/cpu-s"); ok2 && c > 0 && w/c < 0.9 {
					notes = append(notes, fmt.Sprintf("%s %s: ours ran at %.0f%% of a CPU (MB/s %s vs MB/cpu-s %s): the machine was contended.", model.label, in.label, 100*w/c, f2(w), f2(c)))
				}
			}
			what := fmt.Sprintf("%s %s", model.label, in.label)
			r.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", model.label, in.label, oursCell, mtok, hfCell, tkCell,
				rHF, r.check(what+" ≥10× HF", vHF >= goalHF, okHF, gate),
				rTK, r.check(what+" ≥3× tiktoken", vTK >= goalTiktoken, okTK, gate), tokCell)
		}
	}
	r.printf("\n")
	if pr != nil {
		for _, p := range pr.Results {
			if p.CPUPerWall > 0 && p.CPUPerWall < 0.9 {
				notes = append(notes, fmt.Sprintf("peer %s on %s had %.0f%% of a CPU (cpu/wall %.2f, loadavg %v): its wall-clock MB/s is depressed by other work; the CPU ratio is the fair one.", p.Name, filepath.Base(p.File), 100*p.CPUPerWall, p.CPUPerWall, p.Loadavg))
			}
		}
	}
	for _, n := range notes {
		r.printf("- %s\n", n)
	}
	if len(notes) > 0 {
		r.printf("\n")
	}
	r.printf("Per CPU-second:\n\n")
	r.printf("| tokenizer | input | ours MB/cpu-s | HF MB/cpu-s | tiktoken MB/cpu-s |\n|---|---|---|---|---|\n")
	for _, model := range models {
		for _, in := range inputs {
			name := "BenchmarkEncode/" + model.key + "/" + in.key
			cells := []string{spread(g, name, "MB/cpu-s"), "—", "—"}
			if hf := pr.find("hf-"+model.key+"-chunks", in.file); hf != nil {
				cells[1] = f2(hf.SteadyMBPerCPU)
			}
			if tk := pr.find("tiktoken-gpt2-chunks", in.file); tk != nil {
				cells[2] = f2(tk.SteadyMBPerCPU)
			}
			r.printf("| %s | %s | %s |\n", model.label, in.label, strings.Join(cells, " | "))
		}
	}
	r.printf("\n")

	// 2. Adversarial.
	r.printf("## Linear time: adversarial 1 MB inputs (one Encode call)\n\n")
	r.printf("Goal: per-byte time ≤%.0f× that of normal-1MB (the first 1 MB of tinyshakespeare) with the same tokenizer. "+
		"The ratio is given on wall-clock ns/byte and per CPU-second; the verdict takes the larger.\n\n", goalAdvRatio)
	r.printf("| tokenizer | input | MB/s | ns/byte | × normal wall · CPU | ≤%.0f× |\n|---|---|---|---|---|---|\n", goalAdvRatio)
	advInputs := []string{"normal-1MB", "no-whitespace-letters", "no-whitespace-mixed", "no-whitespace-digits", "no-whitespace-unicode", "one-char-run"}
	for _, model := range models {
		prefix := "BenchmarkEncodeAdversarial/" + model.key + "/"
		base, okBase := g.median(prefix+"normal-1MB", "ns/byte")
		baseCPU, okBaseCPU := g.median(prefix+"normal-1MB", "MB/cpu-s")
		// Inputs the benchmark has beyond the known list are shown too.
		names := slices.Clone(advInputs)
		for k := range g.runs {
			if s, ok := strings.CutPrefix(k, prefix); ok && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
		for _, in := range names {
			name := prefix + in
			what := model.label + " " + in + " ≤5× normal"
			v, ok := g.median(name, "ns/byte")
			if !ok {
				why := g.why(name)
				r.printf("| %s | %s | %s | | | %s |\n", model.label, in, why,
					r.check(what, false, strings.HasPrefix(why, "FAILED"), in != "normal-1MB"))
				continue
			}
			if in == "normal-1MB" {
				r.printf("| %s | %s | %s | %s | 1 (baseline) | |\n", model.label, in, spread(g, name, "MB/s"), spread(g, name, "ns/byte"))
				continue
			}
			cell, worst := "—", 0.0
			if okBase {
				worst = v / base
				cell = f2(worst) + "×"
				if c, ok := g.median(name, "MB/cpu-s"); ok && okBaseCPU && c > 0 {
					cell += " · " + f2(baseCPU/c) + "×"
					worst = max(worst, baseCPU/c)
				}
			}
			r.printf("| %s | %s | %s | %s | %s | %s |\n", model.label, in, spread(g, name, "MB/s"), spread(g, name, "ns/byte"),
				cell, r.check(what, worst <= goalAdvRatio, okBase, true))
		}
	}
	r.printf("\n")

	// 3. Workers.
	r.printf("## EncodeBatch workers (GPT-2, 16 × ~1 MB pieces of tinyshakespeare repeated)\n\n")
	r.printf("Goal: 2 workers ≥%.1f× one (wall clock). \"CPUs used\" is the process's CPU time over wall time: below ~1.8 with 2 workers, the machine did not give the run two cores and the speedup cannot be judged.\n\n", goalSpeedup)
	w1, ok1 := g.median("BenchmarkEncodeBatchWorkers/1", "MB/s")
	w2, ok2 := g.median("BenchmarkEncodeBatchWorkers/2", "MB/s")
	procs := 0
	for _, rn := range g.runs["BenchmarkEncodeBatchWorkers/2"] {
		procs = rn.procs
	}
	r.printf("| workers | MB/s | CPUs used | speedup | ≥%.1f× |\n|---|---|---|---|---|\n", goalSpeedup)
	for _, w := range []string{"1", "2"} {
		name := "BenchmarkEncodeBatchWorkers/" + w
		cell := spread(g, name, "MB/s")
		if _, ok := g.median(name, "MB/s"); !ok {
			cell = g.why(name)
		}
		used := spread(g, name, "cpu/wall")
		if w == "1" {
			r.printf("| 1 | %s | %s | 1 | |\n", cell, used)
			continue
		}
		sp := "—"
		if ok1 && ok2 && w1 > 0 {
			sp = f2(w2/w1) + "×"
		}
		verdict := r.check("2 workers ≥1.8× one", ok1 && ok2 && w1 > 0 && w2/w1 >= goalSpeedup, ok1 && ok2, true)
		if u, ok := g.median(name, "cpu/wall"); ok && u < goalSpeedup && strings.Contains(verdict, "FAIL") {
			verdict += " (inconclusive: only " + f2(u) + " CPUs)"
		}
		r.printf("| 2 | %s | %s | %s | %s |\n", cell, used, sp, verdict)
	}
	if procs > 0 {
		r.printf("\nGOMAXPROCS=%d for this benchmark", procs)
		if procs < 2 {
			r.printf(" (**fewer than 2: the speedup cannot show**)")
		}
		r.printf("; the machine has %d CPUs.\n", runtime.NumCPU())
	}
	r.printf("\n")

	// 4. Load.
	r.printf("## Loading\n\n")
	loadProcs := 0
	for k, rs := range g.runs {
		if strings.HasPrefix(k, "BenchmarkLoad/") && len(rs) > 0 {
			loadProcs = rs[0].procs
		}
	}
	r.printf("Goal: <%.0f ms, file read included (GOMAXPROCS=%d, as a program started on this machine would have).\n\n", goalLoadMilli, loadProcs)
	r.printf("| tokenizer | from memory ms | incl. file read ms | <%.0f ms |\n|---|---|---|---|\n", goalLoadMilli)
	for _, v := range []string{"gpt2-tokenizer.json", "gpt2-vocab-merges", "neox-20b"} {
		name := "BenchmarkLoad/" + v
		mem := spread(g, name+"/mem", "ms/op")
		if _, ok := g.median(name+"/mem", "ms/op"); !ok {
			mem = g.why(name + "/mem")
		}
		file, okFile := g.median(name+"/file", "ms/op")
		fileCell := spread(g, name+"/file", "ms/op")
		if !okFile {
			fileCell = g.why(name + "/file")
		}
		r.printf("| %s | %s | %s | %s |\n", v, mem, fileCell, r.check("load "+v+" <150 ms", file < goalLoadMilli, okFile, true))
	}
	if pr != nil {
		best := map[string]float64{}
		var order []string
		for _, p := range pr.Results {
			if v, ok := best[p.Name]; !ok || p.LoadS < v {
				if !ok {
					order = append(order, p.Name)
				}
				best[p.Name] = p.LoadS
			}
		}
		var ls []string
		for _, n := range order {
			ls = append(ls, fmt.Sprintf("%s %.0f ms", n, best[n]*1000))
		}
		r.printf("\nPeers' load (Tokenizer.fromFile / get_encoding with require(), in a fresh node process; the best of its processes): %s.\n", strings.Join(ls, ", "))
	}
	r.printf("\n")

	// 5. Peers in detail.
	if pr != nil && len(pr.Results) > 0 {
		r.printf("## Peers in detail\n\n")
		r.printf("Node %s child processes, chunks mode: one awaited encode() per piece, single-threaded (bench-peers.js sets RAYON_NUM_THREADS only for its batch mode, not run here). cpu/wall above 1 is V8's helper threads (GC, compilation); per-CPU-s is throughput per CPU-second of the process.\n\n", pr.Host.Node)
		r.printf("| peer | input | pieces | tokens | cold MB/s | steady MB/s | Mtok/s | cpu/wall | MB per CPU-s | loadavg 1m |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range pr.Results {
			la := make([]string, len(p.Loadavg))
			for i, x := range p.Loadavg {
				la[i] = f2(x)
			}
			r.printf("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", p.Name, filepath.Base(p.File), p.Pieces, p.Tokens,
				f2(p.ColdMBps), f2(p.SteadyMBps), f2(p.SteadyMtok), f2(p.CPUPerWall), f2(p.SteadyMBPerCPU), strings.Join(la, "→"))
		}
		r.printf("\n")
	}

	// 6. Machine.
	r.printf("## Machine and commands\n\n")
	r.printf("- CPUs (nproc): %d; CPU: %s\n", runtime.NumCPU(), cpuModel(g.cpu))
	r.printf("- loadavg: start %s; end %s\n", orDash(*loadStart), orDash(readLoadavg()))
	r.printf("- %s", *goVersion)
	if pr != nil {
		r.printf("; node %s", pr.Host.Node)
	}
	r.printf("\n- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	if *corpusNote != "" {
		r.printf("- corpus: %s\n", *corpusNote)
	} else if *corpus != "" {
		r.printf("- corpus: %s\n", *corpus)
	}
	if *shakespeare != "" {
		r.printf("- tinyshakespeare: %s\n", *shakespeare)
	}
	if *cmd != "" {
		r.printf("\n```\n%s\n```\n", strings.TrimSpace(*cmd))
	}
	r.printf("\n## Verdict\n\n")
	if len(r.failures) == 0 {
		r.printf("All goals PASS.\n")
	} else {
		r.printf("%d goal check(s) FAIL or were not measured:\n\n", len(r.failures))
		for _, f := range r.failures {
			r.printf("- %s\n", f)
		}
	}

	text := r.w.String()
	os.Stdout.WriteString(text)
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fatal(err)
		}
		if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
			fatal(err)
		}
	}
	if len(r.failures) > 0 && os.Getenv("BENCH_STRICT") == "1" {
		fmt.Fprintf(os.Stderr, "benchreport: %d goal check(s) failed (BENCH_STRICT=1)\n", len(r.failures))
		os.Exit(1)
	}
}

func cpuModel(fromGo string) string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	if fromGo != "" {
		return fromGo
	}
	return "unknown"
}

func readLoadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// busyNote warns when the 1-minute loadavg before the run (when nothing of ours ran yet)
// shows other work on the machine.
func busyNote(loadStart string) string {
	f := strings.Fields(loadStart)
	if len(f) == 0 {
		return ""
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0.7 {
		return ""
	}
	return fmt.Sprintf("other work was running (1-minute loadavg %.2f on %d CPUs before the run began): wall-clock figures are noisy, compare the per-CPU-second figures too.", v, runtime.NumCPU())
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func fatal(err error) {
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "benchreport: %v (run `make bench`, which writes it)\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
	}
	os.Exit(1)
}
