package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize/spec"
)

// runPart runs part WorkerIndex of a partitioned run (NumWorkers > 0): its slice of the
// inputs into its own resumable dataset in Dir/parts/part-IIIII-of-WWWWW.
func (r *TokenizeRun) runPart(ctx context.Context) (*shards.Manifest, RunStats, error) {
	t0 := time.Now()
	var stats RunStats
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w, i := r.NumWorkers, r.WorkerIndex
	if i < 0 || i >= w {
		return nil, stats, fmt.Errorf("worker index %d is not in [0, %d)", i, w)
	}
	if r.AppendEOD && r.Tokenizer.EOD() < 0 {
		return nil, stats, fmt.Errorf("tokenizer %s has no end-of-document token; pass --append-eod=false", r.Tokenizer.Name())
	}
	if err := r.checkSplits(); err != nil {
		return nil, stats, err
	}
	dtype := shards.DTypeForVocab(r.Tokenizer.VocabSize())
	desc, err := r.describeJob(dtype)
	if err != nil {
		return nil, stats, err
	}
	runJob := desc.runJob()
	stats.PartDir = shards.PartDir(i, w)

	// The run already merged: nothing to do.
	var top *shards.Manifest
	if r.runTop != nil { // (local parts': read once for all)
		top, err = r.runTop.m, r.runTop.err
	} else {
		top, err = shards.ReadManifest(ctx, r.Store, r.Dir)
	}
	if perr := r.planTokenizerFiles(top, err); perr != nil {
		return nil, stats, perr
	}
	if earlier := r.earlierPart(ctx, desc, runJob, top, i, w); earlier != nil {
		desc, runJob = earlier, earlier.runJob()
	}
	switch {
	case err == nil && top.Part == nil && top.Source["job"] == runJob && !r.Overwrite:
		if perr := shards.CheckPresent(ctx, r.Store, r.Dir, top); perr != nil {
			return nil, stats, fmt.Errorf("%s holds this run's merged dataset, but it is damaged (%v); pass --overwrite to make it again", r.where(), perr)
		}
		stats = ManifestStats(top)
		stats.PartDir, stats.AlreadyComplete, stats.AlreadyMerged, stats.Elapsed = shards.PartDir(i, w), true, true, time.Since(t0)
		log.Info("already complete: the run's parts are merged", "dataset", r.where(), "docs", top.Documents, "tokens", top.Tokens)
		return top, stats, nil
	case err == nil && !r.Overwrite:
		other := "another job"
		if _, merged := top.Source["num_workers"]; !merged {
			other = "an unpartitioned run" // not merge-parts
		}
		changed, cerr := desc.changedFrom(top, r.Tokenizer.Name(), true)
		if cerr != nil {
			return nil, stats, cerr
		}
		if changed != "" {
			other += ": " + changed
		}
		return nil, stats, fmt.Errorf("%s already holds a dataset made by %s (manifest.json with %d documents); pass --overwrite to replace it or choose another output", r.where(), other, top.Documents)
	case err != nil && !errors.Is(err, shards.ErrMissing) && !r.Overwrite:
		return nil, stats, err
	case !errors.Is(err, shards.ErrMissing):
		// --overwrite over a merged dataset (or a broken manifest): it goes before
		// any part is made again, so that no reader sees it over parts' shards that
		// no longer match it (as a run without parts removes its own). The merge
		// writes the new one.
		if derr := r.Store.Delete(ctx, shards.ManifestKey(r.Dir)); derr != nil && !errors.Is(derr, storage.ErrNotExist) {
			return nil, stats, fmt.Errorf("replace the dataset in %s: remove its manifest: %w", r.where(), derr)
		}
		if err == nil {
			// A single run's shards, which no merge of parts lists: they would stay
			// on disk beside the new parts' (the parts' own are rewritten by them).
			for _, s := range top.Shards {
				if strings.HasPrefix(s.Prefix, shards.PartsDir+"/") {
					continue
				}
				for _, ext := range []string{".bin", ".idx"} {
					if derr := r.Store.Delete(ctx, shards.ShardKey(r.Dir, s)+ext); derr != nil && !errors.Is(derr, storage.ErrNotExist) {
						log.Warn("could not remove a shard of the replaced dataset", "key", shards.ShardKey(r.Dir, s)+ext, "err", derr)
					}
				}
			}
		}
		log.Info("replacing the dataset: its manifest is removed until the parts are merged again", "dataset", r.where())
	}

	sizes := desc.sizes()
	size := func(name string) int64 { return sizes[name] }
	slice := Partition(r.splits(), size, w, r.stripeSize())[i]
	part := *r
	part.PlanTokenizerFiles, part.runTop = nil, nil // planned above, with the run's manifest (not the part's)
	part.NumWorkers, part.WorkerIndex = 0, 0
	part.Dir = joinKey(r.Dir, shards.PartDir(i, w))
	part.mergedDir = r.Dir
	part.Resume = true
	pd := *desc
	pd.Partition = &jobPartition{Version: partitionVersion, NumWorkers: w, WorkerIndex: i}
	part.partDesc = &pd
	part.ranges = make([][]prep.FileRange, len(slice))
	part.rangeInputs = make([][]int, len(slice))
	splitNames := make([]string, len(slice))
	for k, s := range slice {
		part.ranges[k], part.rangeInputs[k] = s.Ranges, s.Inputs
		if part.ranges[k] == nil {
			part.ranges[k] = []prep.FileRange{}
		}
		splitNames[k] = s.Split
	}
	part.part = &shards.PartInfo{Index: i, Count: w, Job: runJob, Splits: splitNames, Slice: slice}
	var shared []string
	for _, s := range slice {
		for _, rg := range s.Ranges {
			if rg.IsStriped() {
				shared = append(shared, rg.String())
			}
		}
	}
	log.Info("partitioned run", "part", i, "of", w, "dir", part.where(), "input_bytes", sliceBytes(slice, size), "run_job", short(runJob))
	if len(shared) > 0 {
		log.Info("files shared with other parts: decompressing all of each, tokenizing these stripes", "part", i, "stripes", shared)
	}
	if !r.Overwrite {
		if err := r.refuseMixedRestart(ctx, &part, &pd, runJob, i, w); err != nil {
			return nil, stats, err
		}
	}
	m, pstats, err := part.Run(ctx)
	pstats.PartDir = stats.PartDir
	if err == nil && pstats.AlreadyComplete {
		log.Info("part already complete: not redone", "part", i, "of", w, "dir", part.where())
	}
	return m, pstats, err
}

// earlierPart is the run's job desc with the tokenizer's earlier fingerprint (see
// earlierJob) where the run's merged dataset top, part i's dataset or its journal
// records that run made so (the same ids): a part of an array job made with
// --tokenizer r50k_base.tiktoken before 88c3dbf is then found complete, or resumed,
// by a rerun with the same --tokenizer; a part not begun takes the job of the run's
// first finished part. Else nil.
func (r *TokenizeRun) earlierPart(ctx context.Context, desc *jobDesc, runJob string, top *shards.Manifest, i, w int) *jobDesc {
	var recorded []string
	if top != nil && top.Part == nil {
		if s, _ := top.Source["job"].(string); s != runJob {
			recorded = append(recorded, s)
		}
	}
	dir := joinKey(r.Dir, shards.PartDir(i, w))
	m, merr := shards.ReadManifest(ctx, r.Store, dir)
	if merr == nil && m.Part != nil && m.Part.Job != runJob {
		recorded = append(recorded, m.Part.Job)
	}
	part := TokenizeRun{Dir: dir}
	j, jerr := loadJournal(ctx, r.Store, part.journalKey())
	if jerr == nil && j.Desc != nil {
		if rj := j.Desc.runJob(); rj != runJob {
			recorded = append(recorded, rj)
		}
	}
	if top == nil && errors.Is(merr, shards.ErrMissing) && errors.Is(jerr, storage.ErrNotExist) && spec.EarlierFingerprint(r.Tokenizer) != "" {
		// A part not begun yet takes the job its run's finished parts record: made
		// with the new fingerprint it would not merge with them, and they, found
		// complete by a rerun, would not be made again.
		for k := range w {
			if k == i {
				continue
			}
			m, err := shards.ReadManifest(ctx, r.Store, joinKey(r.Dir, shards.PartDir(k, w)))
			if err != nil || m.Part == nil {
				continue
			}
			if m.Part.Job != runJob {
				recorded = append(recorded, m.Part.Job)
			}
			break
		}
	}
	if len(recorded) == 0 {
		return nil
	}
	return r.earlierDesc(desc, (*jobDesc).runJob, recorded...)
}

// Slice returns what the run reads, split by split: every input whole, or, for one part
// of a partitioned run (NumWorkers > 0), its slice (see Partition); and the bytes that
// is, for a progress bar's total (with LocalParts, the bytes all the parts read).
func (r *TokenizeRun) Slice() ([]SplitRanges, int64, error) {
	sizes := map[string]int64{}
	for _, s := range r.splits() {
		for _, name := range s.Inputs {
			fi, err := statInput(name)
			if err != nil {
				return nil, 0, err
			}
			sizes[name] = fi.Size()
		}
	}
	size := func(name string) int64 { return sizes[name] }
	var slice []SplitRanges
	if r.NumWorkers > 0 {
		if r.WorkerIndex < 0 || r.WorkerIndex >= r.NumWorkers {
			return nil, 0, fmt.Errorf("worker index %d is not in [0, %d)", r.WorkerIndex, r.NumWorkers)
		}
		slice = Partition(r.splits(), size, r.NumWorkers, r.stripeSize())[r.WorkerIndex]
	} else {
		for _, s := range r.splits() {
			slice = append(slice, SplitRanges{Split: s.Split, Ranges: wholeRanges(s.Inputs)})
		}
		if r.LocalParts > 1 {
			// The bytes all the parts read: each part that shares a compressed file by
			// stripes reads all of it.
			var total int64
			for _, part := range Partition(r.splits(), size, r.LocalParts, r.stripeSize()) {
				total += sliceBytes(part, size)
			}
			return slice, total, nil
		}
	}
	return slice, sliceBytes(slice, size), nil
}

// refuseMixedRestart refuses to start part i of w over when its journal is of another
// run (a killed task rerun with another tokenizer, --shard-size, ...: not only an
// input's modification time) while a part of that run is finished beside it: the part
// would be made under the new settings next to parts of the old ones, which merge-parts
// refuses (and a finished part rerun so is refused too). It names the change and the
// finished part's command. Without a finished part of the old run (all its parts
// unfinished, or their manifests removed by prep --slurm --overwrite) the part starts
// over as any changed job does.
func (r *TokenizeRun) refuseMixedRestart(ctx context.Context, part *TokenizeRun, desc *jobDesc, runJob string, i, w int) error {
	old, err := loadJournal(ctx, r.Store, part.journalKey())
	if err != nil || old.Desc == nil || old.Desc.runJob() == runJob {
		return nil // none, unusable (the run says so), or of this run
	}
	oldRun := old.Desc.runJob()
	for k := range w {
		if k == i {
			continue
		}
		m, err := shards.ReadManifest(ctx, r.Store, joinKey(r.Dir, shards.PartDir(k, w)))
		if err != nil || m.Part == nil || m.Part.Job != oldRun {
			continue
		}
		cmd, _ := m.Source["command"].(string)
		as := fmt.Sprintf("part %d ran: %s", k, cmd)
		if own, ok := withWorkerIndex(cmd, i); ok {
			as = fmt.Sprintf("for this part, as part %d ran: %s", k, own)
		} else if cmd != "" {
			as += "; its index came from the array job's environment"
		}
		return fmt.Errorf("%s holds the unfinished part %d of %d of another run, whose part %d is finished (%s): %s\n---> HINT: rerun this task as that run's tasks were (%s); to change the settings, rerun every task with --overwrite, then merge",
			part.where(), i, w, k, shards.PartDir(k, w), old.Desc.noMTimes().changes(desc.noMTimes()), as)
	}
	return nil
}

// withWorkerIndex is cmd, another task's command line, with its --worker-index (or
// -worker-index, with its value after a space or '=') set to i: the command for task i.
// ok is false where cmd gives no index (the array job's environment did).
func withWorkerIndex(cmd string, i int) (string, bool) {
	f := strings.Split(cmd, " ")
	ok := false
	for k := 0; k < len(f); k++ {
		name, _, eq := strings.Cut(f[k], "=")
		if name != "--worker-index" && name != "-worker-index" {
			continue
		}
		switch {
		case eq:
			f[k] = name + "=" + strconv.Itoa(i)
		case k+1 < len(f):
			f[k+1] = strconv.Itoa(i)
			k++
		default:
			continue
		}
		ok = true
	}
	return strings.Join(f, " "), ok
}
