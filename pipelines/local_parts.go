package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
)

// A run reads its inputs in order, and its output is in that order too: with several
// compressed inputs, each read by one reader (a .jsonl.zst or .jsonl.gz stream cannot
// be cut), the readers of the next files wait a few batches ahead until the writer
// reaches their file, so one reader at a time feeds the tokenizers: ~5 of them for
// zstd, ~2 for gzip (docs/tokenizer-performance.md). LocalParts runs the job as a
// partitioned run whose parts all run at once in this process, each with its own
// readers, its share of the workers and its own shards; shards.MergeParts then lists
// them in Dir/manifest.json, the documents in the order of a single-process run.

// readerFeeds is about how many tokenizers one reader of a compressed JSONL file keeps
// busy (zstd; gzip feeds fewer): SuggestLocalParts's unit.
const readerFeeds = 5

// SuggestLocalParts returns the LocalParts that would let the readers of compressed
// JSONL inputs feed workers tokenizers: one part per readerFeeds workers, at most one
// per compressed input; 1 (no parts) when fewer than two inputs are compressed or the
// workers are few enough for one reader.
func SuggestLocalParts(inputs []string, workers int) int {
	compressed := 0
	for _, in := range inputs {
		if sharedByStripes(in) {
			compressed++
		}
	}
	if compressed < 2 {
		return 1
	}
	return max(1, min(compressed, (workers+readerFeeds-1)/readerFeeds))
}

// runLocalParts runs the job as r.LocalParts parts of a partitioned run at once (see
// NumWorkers), part i with Workers/LocalParts workers (the first Workers%LocalParts
// parts one more), and then merges them. A part that fails stops the others; the
// parts are resumable, so a rerun keeps what they finished.
func (r *TokenizeRun) runLocalParts(ctx context.Context) (*shards.Manifest, RunStats, error) {
	t0 := time.Now()
	k := r.LocalParts
	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if k > workers {
		return nil, RunStats{}, fmt.Errorf("%d local parts for %d workers: each part needs a worker at least", k, workers)
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The whole run's directory is this run's (as a run without parts locks it): a
	// second run into it fails at once naming this one, not at the merge.
	lock, err := storage.LockDir(ctx, r.Store, r.Dir, r.owner())
	if err != nil {
		return nil, RunStats{}, err
	}
	defer lock.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lock.Lost():
			cancel(lock.Check())
		case <-ctx.Done():
		}
	}()
	// The run's manifest, for every part's check that the output is this run's, and
	// for the tokenizer files they all list: read once, under the lock.
	top, terr := shards.ReadManifest(ctx, r.Store, r.Dir)
	base := *r
	base.runTop = &readManifest{m: top, err: terr}
	if err := base.planTokenizerFiles(top, terr); err != nil {
		return nil, RunStats{}, err
	}
	base.PlanTokenizerFiles = nil
	stats := make([]RunStats, k)
	manifests := make([]*shards.Manifest, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		p := base
		p.LocalParts = 0
		p.NumWorkers, p.WorkerIndex = k, i
		p.Workers = workers / k
		if i < workers%k {
			p.Workers++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			manifests[i], stats[i], errs[i] = p.Run(ctx)
			if errs[i] != nil {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil {
		// The first part's error, not the others' "context canceled" that it caused.
		if !errors.Is(cause, context.Canceled) {
			return nil, RunStats{}, cause
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				return nil, RunStats{}, err
			}
		}
		return nil, RunStats{}, cause
	}
	if merged := manifests[0]; merged != nil && stats[0].AlreadyMerged {
		// Merged by an earlier run: every part found it so.
		total := ManifestStats(merged)
		total.AlreadyComplete, total.Elapsed = true, time.Since(t0)
		log.Info("already complete: the run's parts are merged", "dataset", r.where(), "docs", merged.Documents, "tokens", merged.Tokens)
		return merged, total, nil
	}
	total := r.sumPartStats(stats)
	if unknown := countRecordsUnknown(stats); unknown > 0 {
		// A finished part's stats are its manifest's, whose counts of records an older
		// gptkit did not keep.
		log.Warn("the counts of bad, empty, filtered and truncated records leave out the parts an older gptkit finished", "parts", unknown, "of", k)
	}
	res, err := shards.MergeParts(ctx, r.Store, r.Dir, shards.MergePartsOptions{Count: k, Overwrite: r.Overwrite, Command: r.Command})
	if err != nil {
		return nil, RunStats{}, err
	}
	total.Elapsed = time.Since(t0)
	log.Info("local parts merged", "dataset", r.where(), "parts", k, "docs", res.Manifest.Documents, "tokens", res.Manifest.Tokens)
	return res.Manifest, total, nil
}

// sumPartStats adds up the stats of r's parts, split by split in r's order of splits.
// (A part that an earlier run finished has the stats its manifest keeps, and adds its
// shards and documents to ResumedShards and ResumedDocs too.)
func (r *TokenizeRun) sumPartStats(parts []RunStats) RunStats {
	var total RunStats
	var splits []SplitStats
	for _, s := range r.splits() {
		splits = append(splits, SplitStats{Split: s.Split})
	}
	for _, ps := range parts {
		if total.Restarted == "" {
			total.Restarted = ps.Restarted
		}
		for _, ss := range ps.Splits {
			if ps.AlreadyComplete {
				ss.ResumedShards, ss.ResumedDocs = ss.Shards, ss.Docs
			}
			j := slices.IndexFunc(splits, func(s SplitStats) bool { return s.Split == ss.Split })
			if j < 0 {
				j = len(splits)
				splits = append(splits, SplitStats{Split: ss.Split})
			}
			splits[j] = addSplitStats(splits[j], ss)
		}
	}
	for _, ss := range splits {
		total.add(ss)
	}
	return total
}

// countRecordsUnknown is how many parts an earlier run had finished without keeping
// the counts of their records (RunStats.RecordsUnknown).
func countRecordsUnknown(parts []RunStats) int {
	n := 0
	for _, ps := range parts {
		if ps.AlreadyComplete && ps.RecordsUnknown {
			n++
		}
	}
	return n
}

// addSplitStats adds b's counts to a's (two parts' stats of one split).
func addSplitStats(a, b SplitStats) SplitStats {
	a.Docs += b.Docs
	a.Empty += b.Empty
	a.Bad += b.Bad
	a.Filtered += b.Filtered
	a.Tokens += b.Tokens
	a.InvalidUTF8 += b.InvalidUTF8
	a.BytesIn += b.BytesIn
	a.TextBytes += b.TextBytes
	a.RunTextBytes += b.RunTextBytes
	a.RunTokens += b.RunTokens
	a.Truncated += b.Truncated
	a.UnreadBytes += b.UnreadBytes
	a.UnreadUnknown = a.UnreadUnknown || b.UnreadUnknown
	a.Shards += b.Shards
	a.ResumedShards += b.ResumedShards
	a.ResumedDocs += b.ResumedDocs
	a.Elapsed = max(a.Elapsed, b.Elapsed)
	a.WriteTime += b.WriteTime
	a.BadRecords = prep.MergeBadRecords(a.BadRecords, b.BadRecords)
	return a
}
