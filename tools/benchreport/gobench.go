package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	med = medianOf(xs)
	return med, xs[0], xs[len(xs)-1], len(xs), true
}

// named returns the benchmarks whose names start with prefix, sorted.
func (g *goBench) named(prefix string) []string {
	var names []string
	for name := range g.runs {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sortStrings(names)
	return names
}

// median is stat's median of name's unit.
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

// merge adds o's runs, failures and skips to g.
func (g *goBench) merge(o *goBench) {
	for k, v := range o.runs {
		g.runs[k] = append(g.runs[k], v...)
	}
	for k, v := range o.failed {
		g.failed[k] = append(g.failed[k], v...)
	}
	for k, v := range o.skip {
		g.skip[k] = append(g.skip[k], v...)
	}
	if g.cpu == "" {
		g.cpu = o.cpu
	}
}

func sortStrings(xs []string) { slices.Sort(xs) }
