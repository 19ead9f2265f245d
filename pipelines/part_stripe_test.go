package pipelines

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"gptkit/internal/testfiles"
	"gptkit/shards"
)

// testStripeBytes is the stripe size of the striped tests: the compressed files of
// stripedCorpus hold 1 to 50 stripes of it.
const testStripeBytes = 8 << 10

// stripedCorpus writes a corpus of compressed JSONL files to dir, tinyshakespeare
// pieces of 100 to 1,500 bytes (every 13th document empty, every 29th line not JSON):
// train = x.jsonl.zst (500 documents, about half the bytes), y.jsonl.gz (250),
// z.jsonl (30), val = v.json.gz (80), test = w.jsonl.zst (20).
func stripedCorpus(t testing.TB, dir string) []SplitInputs {
	t.Helper()
	text := string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))
	seed, pos := uint32(7), 0
	piece := func() string {
		seed = seed*1664525 + 1013904223
		n := 100 + int(seed>>8)%1400
		if pos+n > len(text) {
			pos = 0
		}
		s := text[pos : pos+n]
		pos += n
		return s
	}
	jsonl := func(docs int) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for i := range docs {
			switch {
			case i%29 == 11:
				b.WriteString("not json\n")
			case i%13 == 5:
				enc.Encode(map[string]any{"text": "", "meta": i})
			default:
				enc.Encode(map[string]any{"text": piece(), "meta": i})
			}
		}
		return b.Bytes()
	}
	write := func(name string, data []byte) string {
		var buf bytes.Buffer
		switch {
		case strings.HasSuffix(name, ".gz"):
			zw := gzip.NewWriter(&buf)
			zw.Write(data)
			zw.Close()
		case strings.HasSuffix(name, ".zst"):
			zw, err := zstd.NewWriter(&buf)
			if err != nil {
				t.Fatal(err)
			}
			zw.Write(data)
			zw.Close()
		default:
			buf.Write(data)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return []SplitInputs{
		{Split: "train", Inputs: []string{write("x.jsonl.zst", jsonl(500)), write("y.jsonl.gz", jsonl(250)), write("z.jsonl", jsonl(30))}},
		{Split: "val", Inputs: []string{write("v.json.gz", jsonl(80))}},
		{Split: "test", Inputs: []string{write("w.jsonl.zst", jsonl(20))}},
	}
}

// stripedJob is the job over the striped corpus into out (a single run, Resume set).
func stripedJob(t testing.TB, splits []SplitInputs, out string) *TokenizeRun {
	run := &TokenizeRun{
		Splits: splits, Store: dirStore(t, out), Name: "st", Tokenizer: gpt2(t), AppendEOD: true, ShardBytes: 8 << 10,
		Resume: true, Command: "prep st", Workers: 3, SkipBad: true, stripeBytes: testStripeBytes,
	}
	run.hooks.now = fixedClock
	return run
}

// stripedPart is the job of part i of w over the striped corpus.
func stripedPart(t testing.TB, splits []SplitInputs, out string, i, w int) *TokenizeRun {
	run := stripedJob(t, splits, out)
	run.Resume = false // implied
	run.NumWorkers, run.WorkerIndex = w, i
	run.Command = fmt.Sprintf("prep st --num-workers %d --worker-index %d", w, i)
	return run
}

// TestStripedRunEqualsSingle: compressed files shared by stripes among more workers
// than there are files (3, 4 and 7 workers for 5 files, 1 for reference), merged, give
// the documents of a single-process run, split by split and in order, the same counts
// of bad and empty records, and manifests equal but for the shards' layout.
func TestStripedRunEqualsSingle(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	ref := t.TempDir()
	_, single, err := stripedJob(t, splits, ref).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if single.Bad == 0 || single.Empty == 0 {
		t.Fatalf("the corpus has no bad or empty records: %+v", single)
	}
	want := splitDocs(t, dirStore(t, ref), "")
	var first string
	for _, w := range []int{1, 3, 4, 7} {
		out := t.TempDir()
		var bad, empty int64
		striped := 0
		for i := range w {
			m, stats, err := stripedPart(t, splits, out, i, w).Run(ctx)
			if err != nil {
				t.Fatalf("part %d of %d: %v", i, w, err)
			}
			bad, empty = bad+stats.Bad, empty+stats.Empty
			for _, s := range m.Shards {
				if s.Stripe != nil {
					striped++
				}
			}
		}
		if bad != single.Bad || empty != single.Empty {
			t.Fatalf("%d workers: the parts counted %d bad and %d empty records, a single run %d and %d", w, bad, empty, single.Bad, single.Empty)
		}
		if w > 1 && striped < 10 {
			t.Fatalf("%d workers: %d shards hold stripes", w, striped)
		}
		res, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"})
		if err != nil {
			t.Fatalf("%d workers: %v", w, err)
		}
		if got := splitDocs(t, dirStore(t, out), ""); !reflect.DeepEqual(got, want) {
			for split := range want {
				t.Logf("%d workers, split %q: %d documents, want %d", w, split, len(got[split]), len(want[split]))
			}
			t.Fatalf("%d workers: the merged documents differ from a single run's", w)
		}
		var mergedBad, mergedEmpty int64
		for _, rec := range res.Manifest.Records {
			mergedBad, mergedEmpty = mergedBad+rec.Bad, mergedEmpty+rec.Empty
		}
		if mergedBad != single.Bad || mergedEmpty != single.Empty {
			t.Fatalf("%d workers: the merged manifest keeps %d bad and %d empty records, a single run counted %d and %d", w, mergedBad, mergedEmpty, single.Bad, single.Empty)
		}
		c := comparable(res.Manifest)
		if first == "" {
			first = c
		} else if c != first {
			t.Fatalf("%d workers: merged manifest\n%s\nwant (1 worker)\n%s", w, c, first)
		}
		if probs, err := shards.Verify(ctx, dirStore(t, out), ""); err != nil || len(probs) > 0 {
			t.Fatalf("%d workers: verify: %v %v", w, probs, err)
		}
	}
}

// TestStripedPartKilledAndRerun: a part that owns stripes, interrupted after its second
// shard, keeps its shards when rerun and finishes; the merge then equals a single run.
func TestStripedPartKilledAndRerun(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	ref := t.TempDir()
	if _, _, err := stripedJob(t, splits, ref).Run(ctx); err != nil {
		t.Fatal(err)
	}
	const w = 7
	victim := -1
	for i, sl := range Partition(splits, fileSize(t), w, testStripeBytes) {
		for _, s := range sl {
			for _, rg := range s.Ranges {
				if rg.IsStriped() && rg.StripeRem == 1 && victim < 0 {
					victim = i
				}
			}
		}
	}
	if victim < 0 {
		t.Fatal("no part reads stripes")
	}
	out := t.TempDir()
	st := dirStore(t, out)
	for i := range w {
		if i != victim {
			if _, _, err := stripedPart(t, splits, out, i, w).Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	interruptAfter(t, stripedPart(t, splits, out, victim, w), 2)
	if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err == nil {
		t.Fatal("merged with a part killed")
	}
	_, stats, err := stripedPart(t, splits, out, victim, w).Run(ctx)
	if err != nil || stats.ResumedShards != 2 || stats.AlreadyComplete {
		t.Fatalf("rerun of part %d: %+v %v", victim, stats, err)
	}
	if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := splitDocs(t, st, ""), splitDocs(t, dirStore(t, ref), ""); !reflect.DeepEqual(got, want) {
		t.Fatal("the merged documents differ from a single run's")
	}
}

// TestStripeSizeInJob: the stripe size is part of a partitioned run's job when an input
// may be shared by stripes (so parts of another stripe size do not merge), and of no
// other job.
func TestStripeSizeInJob(t *testing.T) {
	splits := stripedCorpus(t, t.TempDir())
	job := func(r *TokenizeRun) *jobDesc {
		d, err := r.describeJob(shards.Uint16)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := stripedPart(t, splits, t.TempDir(), 0, 4), stripedPart(t, splits, t.TempDir(), 0, 4)
	b.stripeBytes = 2 * testStripeBytes
	if ja, jb := job(a), job(b); ja.StripeBytes != testStripeBytes || ja.runJob() == jb.runJob() || !strings.Contains(ja.changes(jb), "stripe size") {
		t.Fatalf("stripe sizes %d and %d: jobs %s %s", ja.StripeBytes, jb.StripeBytes, ja.runJob(), jb.runJob())
	}
	if j := job(stripedJob(t, splits, t.TempDir())); j.StripeBytes != 0 {
		t.Fatalf("a single run's job has stripe size %d", j.StripeBytes)
	}
	plain := stripedPart(t, []SplitInputs{{Split: "train", Inputs: splits[0].Inputs[2:]}}, t.TempDir(), 0, 4)
	if j := job(plain); j.StripeBytes != 0 {
		t.Fatalf("a partitioned run of plain JSONL has stripe size %d", j.StripeBytes)
	}
}

// fileSize is the size of a file, by name, for Partition.
func fileSize(t testing.TB) func(string) int64 {
	return func(name string) int64 {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
}
