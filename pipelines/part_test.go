package pipelines

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
)

// TestPartition checks the cut on random inputs: every JSONL file is tiled by its ranges
// in worker order, every compressed JSONL file goes whole to one worker or in stripes to
// consecutive workers, every other file goes whole to one worker, the slices read the
// inputs in order, and with only JSONL inputs every worker gets its exact share of the
// bytes.
func TestPartition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for try := range 500 {
		var splits []SplitInputs
		sizes := map[string]int64{}
		onlyJSONL := r.IntN(3) == 0
		for s := range 1 + r.IntN(3) {
			sp := SplitInputs{Split: []string{"", "val", "test"}[s]}
			for f := range r.IntN(6) {
				name := fmt.Sprintf("s%d-f%d.jsonl", s, f)
				if !onlyJSONL {
					name += []string{"", "", ".zst", ".gz", ".zip"}[r.IntN(5)]
					name = strings.Replace(name, ".jsonl.zip", ".zip", 1)
				}
				sp.Inputs = append(sp.Inputs, name)
				sizes[name] = r.Int64N(1000)
				if r.IntN(8) == 0 {
					sizes[name] = 0
				}
			}
			if len(sp.Inputs) > 1 && r.IntN(4) == 0 { // a file listed twice
				sp.Inputs = append(sp.Inputs, sp.Inputs[0])
			}
			splits = append(splits, sp)
		}
		w := 1 + r.IntN(12)
		slices := Partition(splits, func(n string) int64 { return sizes[n] }, w, 100)
		if len(slices) != w {
			t.Fatalf("try %d: %d slices for %d workers", try, len(slices), w)
		}
		// Flattened in worker order, the pieces must read every input in order.
		type piece struct {
			worker, split, input int
			rg                   prep.FileRange
		}
		var flat []piece
		var all int64
		for _, sp := range splits {
			for _, in := range sp.Inputs {
				all += sizes[in]
			}
		}
		for k, sl := range slices {
			if len(sl) != len(splits) {
				t.Fatalf("try %d: worker %d has %d splits, want %d", try, k, len(sl), len(splits))
			}
			var mine int64
			for i, s := range sl {
				if s.Split != splits[i].Split || len(s.Inputs) != len(s.Ranges) {
					t.Fatalf("try %d: worker %d split %d is %q, inputs %v for ranges %v", try, k, i, s.Split, s.Inputs, s.Ranges)
				}
				for j, rg := range s.Ranges {
					if x := s.Inputs[j]; x < 0 || x >= len(splits[i].Inputs) || splits[i].Inputs[x] != rg.File {
						t.Fatalf("try %d: worker %d split %d: range %v is of input %d", try, k, i, rg, x)
					}
					flat = append(flat, piece{k, i, s.Inputs[j], rg})
					switch {
					case rg.IsStriped():
						mine += sizes[rg.File] / int64(rg.StripeMod)
					case rg.IsWhole():
						mine += sizes[rg.File]
					default:
						mine += rg.End - rg.Start
					}
				}
			}
			if lo, hi := all*int64(k)/int64(w), all*int64(k+1)/int64(w); onlyJSONL && mine != hi-lo {
				t.Fatalf("try %d: worker %d of %d reads %d bytes, want %d", try, k, w, mine, hi-lo)
			}
		}
		order := 0
		for i, sp := range splits {
			for x, in := range sp.Inputs {
				var off int64
				stripes := 0
				for order < len(flat) && flat[order].split == i && flat[order].input == x {
					p := flat[order]
					switch {
					case p.rg.IsStriped():
						if !sharedByStripes(in) || p.rg.StripeMod < 2 || p.rg.StripeRem != stripes || p.rg.StripeBytes != 100 ||
							stripes > 0 && p.worker != flat[order-1].worker+1 {
							t.Fatalf("try %d: %s: stripes %v of worker %d after %d stripes", try, in, p.rg, p.worker, stripes)
						}
						stripes++
						if stripes == p.rg.StripeMod {
							off = sizes[in]
						}
					case p.rg.IsWhole() && off == 0 && stripes == 0:
						off = sizes[in]
					case p.rg.IsWhole() || p.rg.Start != off || p.rg.End <= p.rg.Start:
						t.Fatalf("try %d: %s: piece %v after byte %d", try, in, p.rg, off)
					default:
						if !prep.Splittable(in) {
							t.Fatalf("try %d: %s was cut", try, in)
						}
						off = p.rg.End
					}
					order++
				}
				if off != sizes[in] && !(sizes[in] == 0 && off == 0) {
					t.Fatalf("try %d: %s read to byte %d of %d (pieces %v)", try, in, off, sizes[in], flat)
				}
			}
		}
		if order != len(flat) {
			t.Fatalf("try %d: pieces out of order: %v", try, flat)
		}
	}
}

// TestPartitionPile: the Pile's 30 train files (.jsonl.zst of 14-15.5 GB each) over 64
// and 256 workers keep every worker busy, each with about its share of the compressed
// bytes (a shared file's bytes divided among its workers), and every file gets ⌊nW/T⌋
// or ⌈nW/T⌉ workers, so that none gets more than n/⌊nW/T⌋ of a file of n bytes. With
// 30 files of ~2.13 shares over 64 workers no cut does much better: a file has 2
// workers (1.07 shares each) or 3 (0.71). With val and test (~0.47 GB each) after
// them, the worker they go to may carry them on top.
func TestPartitionPile(t *testing.T) {
	sizes := map[string]int64{}
	train := SplitInputs{Split: "train"}
	r := rand.New(rand.NewPCG(30, 1))
	for i := range 30 {
		name := fmt.Sprintf("train/%02d.jsonl.zst", i)
		train.Inputs = append(train.Inputs, name)
		sizes[name] = 14_000_000_000 + r.Int64N(1_500_000_000)
	}
	sizes["val.jsonl.zst"], sizes["test.jsonl.zst"] = 470_000_000, 460_000_000
	for _, tc := range []struct {
		name      string
		splits    []SplitInputs
		w         int
		low, high float64 // bounds on a worker's compressed bytes, in equal shares
	}{
		{"train", []SplitInputs{train}, 64, 0.65, 1.13},
		{"train", []SplitInputs{train}, 256, 0.9, 1.12},
		{"train, val, test", []SplitInputs{train, {Split: "val", Inputs: []string{"val.jsonl.zst"}}, {Split: "test", Inputs: []string{"test.jsonl.zst"}}}, 64, 0.65, 1.26},
		{"train, val, test", []SplitInputs{train, {Split: "val", Inputs: []string{"val.jsonl.zst"}}, {Split: "test", Inputs: []string{"test.jsonl.zst"}}}, 256, 0.5, 1.12},
	} {
		var total int64
		for _, sp := range tc.splits {
			for _, in := range sp.Inputs {
				total += sizes[in]
			}
		}
		share := float64(total) / float64(tc.w)
		workers := map[string]int{}
		lo, hi := math.Inf(1), 0.0
		for k, sl := range Partition(tc.splits, func(n string) int64 { return sizes[n] }, tc.w, 0) {
			var mine float64
			for _, s := range sl {
				for _, rg := range s.Ranges {
					workers[rg.File]++
					switch {
					case rg.IsStriped() && rg.StripeBytes != DefaultStripeBytes:
						t.Fatalf("%s over %d workers: %v", tc.name, tc.w, rg)
					case rg.IsStriped():
						mine += float64(sizes[rg.File]) / float64(rg.StripeMod)
					default:
						mine += float64(sizes[rg.File])
					}
				}
			}
			if mine == 0 {
				t.Fatalf("%s over %d workers: worker %d has nothing to do", tc.name, tc.w, k)
			}
			lo, hi = min(lo, mine/share), max(hi, mine/share)
		}
		for _, in := range train.Inputs {
			x := float64(sizes[in]) * float64(tc.w) / float64(total)
			if k := workers[in]; k < int(math.Floor(x)) || k > int(math.Ceil(x)) {
				t.Errorf("%s over %d workers: %s (%.2f shares) has %d workers", tc.name, tc.w, in, x, k)
			}
		}
		t.Logf("%s over %d workers: compressed bytes per worker %.2f-%.2f of an equal share", tc.name, tc.w, lo, hi)
		if lo < tc.low || hi > tc.high {
			t.Errorf("%s over %d workers: compressed bytes per worker %.2f-%.2f of an equal share, want %.2f-%.2f", tc.name, tc.w, lo, hi, tc.low, tc.high)
		}
	}
}

func TestResolveArrayTask(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name       string
		num, index int
		env        func(string) string
		want       string // "I/W from,from", "none", or an error's text
	}{
		{"nothing", -1, -1, env(), "none"},
		{"flags", 4, 2, env(), "2/4 --worker-index,--num-workers"},
		{"zero ignores the environment", 0, -1, env("SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_COUNT", "4"), "none"},
		{"slurm", -1, -1, env("SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_COUNT", "4"), "3/4 SLURM_ARRAY_TASK_ID,SLURM_ARRAY_TASK_COUNT"},
		{"slurm max", -1, -1, env("SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "7"), "1/8 SLURM_ARRAY_TASK_ID,SLURM_ARRAY_TASK_MAX+1"},
		{"slurm rerun of one task", 4, -1, env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "1", "SLURM_ARRAY_TASK_MIN", "2", "SLURM_ARRAY_TASK_MAX", "2"), "2/4 SLURM_ARRAY_TASK_ID,--num-workers"},
		{"slurm rerun without the count", -1, -1, env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "1"), "pass --num-workers W"},
		// sbatch --array=0 alone once made the whole corpus "part 0 of 1".
		{"slurm rerun of task 0", -1, -1, env("SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "1", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "0"), "pass --num-workers W"},
		{"slurm rerun of tasks 2-3", -1, -1, env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "2", "SLURM_ARRAY_TASK_MIN", "2", "SLURM_ARRAY_TASK_MAX", "3"), "pass --num-workers W"},
		{"slurm whole array", -1, -1, env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "3"), "2/4 SLURM_ARRAY_TASK_ID,SLURM_ARRAY_TASK_COUNT"},
		{"slurm from 1", -1, -1, env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "4"), "sbatch --array=0-3"},
		{"kubernetes", 8, -1, env("JOB_COMPLETION_INDEX", "5"), "5/8 JOB_COMPLETION_INDEX,--num-workers"},
		{"kubernetes without a count", -1, -1, env("JOB_COMPLETION_INDEX", "5"), "pass --num-workers W"},
		{"aws", -1, -1, env("AWS_BATCH_JOB_ARRAY_INDEX", "0", "AWS_BATCH_JOB_ARRAY_SIZE", "2"), "0/2 AWS_BATCH_JOB_ARRAY_INDEX,AWS_BATCH_JOB_ARRAY_SIZE"},
		{"flag index wins", 3, 1, env("AWS_BATCH_JOB_ARRAY_INDEX", "0", "AWS_BATCH_JOB_ARRAY_SIZE", "2"), "1/3 --worker-index,--num-workers"},
		{"count without index", 4, -1, env(), "--num-workers 4 needs --worker-index I"},
		{"index without count", -1, 1, env(), "--worker-index 1 needs --num-workers W"},
		{"index with zero", 0, 1, env(), "needs --num-workers W (at least 1)"},
		{"index too big", 2, 2, env(), "worker index 2 (--worker-index) is not in [0, 2)"},
		{"garbage", -1, -1, env("SLURM_ARRAY_TASK_ID", "x"), `SLURM_ARRAY_TASK_ID="x" is not a task number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, ok, err := ResolveArrayTask(tc.num, tc.index, tc.env)
			got := "none"
			switch {
			case err != nil:
				got = err.Error()
			case ok:
				got = fmt.Sprintf("%d/%d %s,%s", task.Index, task.Count, task.IndexFrom, task.CountFrom)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// splitDocs reads a dataset's documents, split by split.
func splitDocs(t testing.TB, st storage.Store, dir string) map[string][][]int {
	t.Helper()
	d, err := shards.OpenDataset(context.Background(), st, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := map[string][][]int{}
	var i int64
	for s, info := range d.Manifest.Shards {
		for range d.Shard(s).Len() {
			out[info.Split] = append(out[info.Split], d.Tokens(i))
			i++
		}
	}
	return out
}

// partRun is the job of part i of w of the split corpus in corpusDir, into out.
func partRun(t testing.TB, corpusDir, out string, i, w int) *TokenizeRun {
	run := resumeJob(t, corpusDir, out, gpt2(t))
	run.Resume = false // implied
	run.NumWorkers, run.WorkerIndex = w, i
	run.Command = fmt.Sprintf("tokenize run --num-workers %d --worker-index %d", w, i)
	return run
}

// runParts runs every part of w in order, then merges them.
func runParts(t *testing.T, corpusDir, out string, w int) *shards.Manifest {
	t.Helper()
	ctx := context.Background()
	for i := range w {
		m, stats, err := partRun(t, corpusDir, out, i, w).Run(ctx)
		if err != nil {
			t.Fatalf("part %d of %d: %v", i, w, err)
		}
		if m.Part == nil || m.Part.Index != i || stats.PartDir != shards.PartDir(i, w) || stats.AlreadyComplete {
			t.Fatalf("part %d of %d: manifest part %+v, stats %+v", i, w, m.Part, stats)
		}
	}
	res, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Manifest
}

// comparable is a merged manifest without what may differ between runs of another
// worker count: the shards' layout, source.created and source.num_workers.
func comparable(m *shards.Manifest) string {
	src := maps.Clone(m.Source)
	delete(src, "created")
	delete(src, "num_workers")
	perSplit := map[string][2]int64{}
	for _, s := range m.Shards {
		c := perSplit[s.Split]
		perSplit[s.Split] = [2]int64{c[0] + s.Documents, c[1] + s.Tokens}
	}
	return fmt.Sprintf("%+v %s %d %d %v %v", m.Tokenizer, m.DType, m.Documents, m.Tokens, src, perSplit)
}

// TestPartitionedRunEqualsSingle: 1, 3 and 4 workers, merged, give the documents of a
// single-process run, split by split and in order, and the same manifest but for the
// shards' layout and the time; the parts' slices cut a JSONL file into byte ranges.
func TestPartitionedRunEqualsSingle(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	ref := t.TempDir()
	single := resumeJob(t, corpusDir, ref, gpt2(t))
	if _, _, err := single.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := splitDocs(t, dirStore(t, ref), "")
	var first string
	for _, w := range []int{1, 3, 4} {
		out := t.TempDir()
		m := runParts(t, corpusDir, out, w)
		got := splitDocs(t, dirStore(t, out), "")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d workers: the merged documents differ from a single run's", w)
		}
		c := comparable(m)
		if first == "" {
			first = c
		} else if c != first {
			t.Fatalf("%d workers: merged manifest\n%s\nwant (1 worker)\n%s", w, c, first)
		}
		if m.Source["num_workers"] != w || len(m.Shards) < w {
			t.Fatalf("%d workers: %d shards, source %v", w, len(m.Shards), m.Source)
		}
		if probs, err := shards.Verify(context.Background(), dirStore(t, out), ""); err != nil || len(probs) > 0 {
			t.Fatalf("%d workers: verify: %v %v", w, probs, err)
		}
		if w == 4 {
			// Part 1 holds a byte range of a.jsonl that starts mid-file.
			p, _ := shards.ReadManifest(context.Background(), dirStore(t, out), shards.PartDir(1, 4))
			if s := fmt.Sprint(p.Part.Slice); !strings.Contains(s, "a.jsonl") {
				t.Fatalf("part 1 of 4 reads %s", s)
			}
		}
	}
}

// TestPartKilledAndRerun: a part interrupted after its first shard has no manifest, so
// the merge refuses, naming it; rerun, it keeps that shard and finishes; a finished part
// is not redone, nor is anything once the run is merged.
func TestPartKilledAndRerun(t *testing.T) {
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	ref := t.TempDir()
	if _, _, err := resumeJob(t, corpusDir, ref, gpt2(t)).Run(ctx); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	st := dirStore(t, out)
	for _, i := range []int{0, 2, 3} {
		if _, _, err := partRun(t, corpusDir, out, i, 4).Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	interruptAfter(t, partRun(t, corpusDir, out, 1, 4), 1)
	_, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{})
	if !errors.Is(err, shards.ErrPartMissing) || !strings.Contains(err.Error(), "part 1 (parts/part-00001-of-00004: started, unfinished") {
		t.Fatalf("merge with part 1 killed: %v", err)
	}
	_, stats, err := partRun(t, corpusDir, out, 1, 4).Run(ctx)
	if err != nil || stats.ResumedShards != 1 || stats.AlreadyComplete {
		t.Fatalf("rerun of part 1: %+v %v", stats, err)
	}
	_, stats, err = partRun(t, corpusDir, out, 2, 4).Run(ctx)
	if err != nil || !stats.AlreadyComplete || stats.AlreadyMerged {
		t.Fatalf("rerun of finished part 2: %+v %v", stats, err)
	}
	if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := splitDocs(t, st, ""), splitDocs(t, dirStore(t, ref), ""); !reflect.DeepEqual(got, want) {
		t.Fatal("the merged documents differ from a single run's")
	}
	m, stats, err := partRun(t, corpusDir, out, 1, 4).Run(ctx)
	if err != nil || !stats.AlreadyMerged || m.Part != nil {
		t.Fatalf("a part of a merged run: %+v %v", stats, err)
	}
	// A part of another job (another shard size) refuses the finished part.
	other := partRun(t, corpusDir, t.TempDir(), 3, 4)
	other.Store = dirStore(t, out)
	other.ShardBytes = 4 << 10
	if _, _, err := other.Run(ctx); err == nil || !strings.Contains(err.Error(), "made by another job") {
		t.Fatalf("a part of another job: %v", err)
	}
	names := slices.Sorted(maps.Keys(snapshot(t, out)))
	for _, n := range names {
		if strings.Contains(n, JournalName) {
			t.Fatalf("a journal is left: %v", names)
		}
	}
}
