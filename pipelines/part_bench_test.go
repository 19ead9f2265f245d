//go:build unix

package pipelines

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gptkit/shards"
)

// BenchmarkPartitionedRun cuts one JSONL corpus (benchJSONL: $BENCH_RUN_MB MB, one file, so
// every part reads a byte range of it) into 4 parts, runs them one after the other, as
// the tasks of an array job would each run on a node of their own, and merges them. It
// reports parts_overhead_pct, what the 4 parts together take beyond one run of the whole
// (each part opens the file, seeks to its first line and writes its own manifest),
// slowest_part_pct, the slowest part's share of the 4 (25 is an even cut: the array job
// is done when its slowest task is), and merge_ms, the time merge-parts takes.
func BenchmarkPartitionedRun(b *testing.B) {
	corpus, size := benchJSONL(b)
	tok := gpt2(b)
	ctx := context.Background()
	const w = 4
	var tSingle, tParts, tSlowest, tMerge time.Duration
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		t0 := time.Now()
		single := &TokenizeRun{Inputs: []string{corpus}, Store: dirStore(b, dir+"/single"), Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20}
		if _, _, err := single.Run(ctx); err != nil {
			b.Fatal(err)
		}
		tSingle += time.Since(t0)
		var slowest time.Duration
		st := dirStore(b, dir+"/parts")
		for k := range w {
			t0 := time.Now()
			part := &TokenizeRun{Inputs: []string{corpus}, Store: st, Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20,
				NumWorkers: w, WorkerIndex: k, Command: fmt.Sprint("part ", k)}
			if _, _, err := part.Run(ctx); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			tParts += d
			slowest = max(slowest, d)
		}
		tSlowest += slowest
		t0 = time.Now()
		if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err != nil {
			b.Fatal(err)
		}
		tMerge += time.Since(t0)
	}
	b.ReportMetric(100*(tParts-tSingle).Seconds()/tSingle.Seconds(), "parts_overhead_pct")
	b.ReportMetric(100*tSlowest.Seconds()/tParts.Seconds(), "slowest_part_pct")
	b.ReportMetric(float64(tMerge.Milliseconds())/float64(b.N), "merge_ms")
	b.ReportMetric(float64(size)*float64(b.N)/tSingle.Seconds()/1e6, "MB/s_single")
}
