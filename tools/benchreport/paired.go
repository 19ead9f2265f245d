package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
)

// Paired rounds (tools/bench.sh, step 3): the goals against native tiktoken-rs are ratios
// of two speeds, and on a shared VM whose speed drifts by ±30% within minutes, ours and
// the peer's measured minutes apart gave a ratio off by as much (run 16: GPT-2 English
// 28.3×, ours timed in a slower minute than tiktoken-rs). So for those four jobs (GPT-2
// and cl100k_base on English and mixed) bench.sh runs tiktoken-rs and our BenchmarkEncode
// back to back, in turn (the peer first in odd rounds, ours first in even ones), for a
// few rounds; each round gives one ratio, and the goal is judged on their median.

// pairedRound is one round of one job: the peer's result and our MB per CPU-second.
type pairedRound struct {
	round int
	peer  peerResult
	ours  float64
}

// pairedRun is what the rounds of one job (model, corpus) measured.
type pairedRun struct {
	rounds []pairedRound
}

// pairedFile names the files of one round of one job in the paired directory:
// rROUND-MODEL-CORPUS.json (bench-peers.js --json) and .txt (go test -bench output).
var pairedFile = regexp.MustCompile(`^r(\d+)-(.+)-(english|mixed)\.json$`)

// readPaired reads the rounds in dir ("" or a missing directory: none). A round whose
// peer or our figure is missing is left out; a job without rounds is absent.
func readPaired(dir string) (map[string]*pairedRun, error) {
	runs := map[string]*pairedRun{}
	if dir == "" {
		return runs, nil
	}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return runs, nil
	} else if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := pairedFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		round, _ := strconv.Atoi(m[1])
		model, corpus := m[2], m[3]
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var p peers
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
		if len(p.Results) != 1 {
			continue // the peer's job failed: bench-peers.js wrote no result
		}
		txt := filepath.Join(dir, fmt.Sprintf("r%d-%s-%s.txt", round, model, corpus))
		fh, err := os.Open(txt)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		g, err := parseGoBench(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", txt, err)
		}
		ours, ok := g.median("BenchmarkEncode/"+model+"/"+corpus, "MB/cpu-s")
		if !ok {
			continue
		}
		key := model + "/" + corpus
		if runs[key] == nil {
			runs[key] = &pairedRun{}
		}
		runs[key].rounds = append(runs[key].rounds, pairedRound{round: round, peer: p.Results[0], ours: ours})
	}
	for _, r := range runs {
		slices.SortFunc(r.rounds, func(a, b pairedRound) int { return a.round - b.round })
	}
	return runs, nil
}

// ratios returns ours / the peer's MB per CPU-second of each round, in round order.
func (r *pairedRun) ratios() []float64 {
	var xs []float64
	for _, rd := range r.rounds {
		xs = append(xs, rd.ours/rd.peer.MBPerCPU)
	}
	return xs
}

// ratio is the median of the rounds' ratios.
func (r *pairedRun) ratio() float64 { return medianOf(r.ratios()) }

// peerMedian is the round whose peer speed is the median of the rounds' (the lower
// middle one of an even count): the peer's figure for the main table, with the ids it
// gave (the same in every round).
func (r *pairedRun) peerMedian() *peerResult {
	rounds := slices.Clone(r.rounds)
	slices.SortFunc(rounds, func(a, b pairedRound) int {
		switch {
		case a.peer.MBPerCPU < b.peer.MBPerCPU:
			return -1
		case a.peer.MBPerCPU > b.peer.MBPerCPU:
			return 1
		}
		return 0
	})
	p := rounds[(len(rounds)-1)/2].peer
	return &p
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// pairedTable writes each job's rounds: ours, the peer, their ratio, and the median.
func pairedTable(r *report, runs map[string]*pairedRun) {
	if len(runs) == 0 {
		return
	}
	r.printf("### Paired rounds against tiktoken-rs\n\n")
	r.printf("The goals against tiktoken-rs above are judged here: each round runs tiktoken-rs (one warm pass, one timed) and our BenchmarkEncode on the same file back to back, the peer first in odd rounds and ours first in even ones, so that both are timed in the same minutes of a machine whose speed drifts; the ratio is the median of the rounds'. MB per CPU-second, one core.\n\n")
	r.printf("| tokenizer | corpus | rounds: ours / tiktoken-rs = ratio | median ratio |\n|---|---|---|---|\n")
	for _, tok := range []string{"gpt2", "cl100k_base"} {
		for _, corpus := range []string{"english", "mixed"} {
			pr := runs[tok+"/"+corpus]
			if pr == nil {
				continue
			}
			cells := ""
			for i, rd := range pr.rounds {
				if i > 0 {
					cells += "; "
				}
				cells += fmt.Sprintf("%s / %s = %.1f×", f1(rd.ours), f1(rd.peer.MBPerCPU), rd.ours/rd.peer.MBPerCPU)
			}
			r.printf("| %s | %s | %s | %.1f× |\n", tok, corpus, cells, pr.ratio())
		}
	}
	r.printf("\n")
}
