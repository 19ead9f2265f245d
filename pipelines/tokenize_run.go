// Package pipelines composes the stages (prep's document readers, the tokenizer, shard
// writers, storage) into the jobs the commands run. Stages hand off through files; this
// package only wires them and keeps the order, the bounds on memory and the bookkeeping.
package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"runtime"
	"strings"
	"time"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// TokenizeRun tokenizes documents into a shards dataset (`tokenize run`, `prep`): the
// files' documents in input order, each followed by the end-of-document id, written as
// GPT-NeoX indexed datasets NAME_text_document{,_001,...}.{bin,idx} (other splits:
// NAME_SPLIT_text_document*, see ShardPrefix) and, last, one manifest.json listing
// every split's shards. The output bytes do not depend on Workers.
type TokenizeRun struct {
	Inputs []string // JSONL (.jsonl, .jsonl.zst, .jsonl.gz) and .txt files, in order
	// Splits, when set, replaces Inputs: each split's inputs become its own shards,
	// written one split after the other, all listed in the one manifest in this order.
	Splits    []SplitInputs
	Store     storage.Store       // where the dataset goes
	Dir       string              // the dataset's directory within Store ("" = its root)
	Name      string              // dataset name: shards are NAME_text_document*
	Tokenizer *tokenize.Tokenizer // the tokenizer
	TokSpec   string              // how the tokenizer was named, for the manifest's provenance
	// TokenizerFiles are the tokenizer files the command stores beside the dataset
	// (cli.TokenizerPlan), listed in the manifest's source (shards.SourceTokenizerFiles).
	TokenizerFiles []string
	TextKey        string // JSONL member holding the text ("" = "text")
	AppendEOD      bool   // append the tokenizer's EOD id after every document
	Workers        int    // encoding goroutines (0 = GOMAXPROCS)
	// ShardBytes closes a shard after the first document that takes its .bin to this
	// many bytes or more (0 = one shard per split). Documents are never split.
	ShardBytes int64
	Overwrite  bool   // replace an existing dataset's manifest instead of refusing
	Command    string // the command line, for provenance
	Logger     *slog.Logger
	// Progress is called with input bytes read and documents handed to the tokenizer
	// (see prep.ReadOptions). A resumed run reads the documents of the shards it keeps
	// again, without handing them on (their bytes count, they do not), and does not
	// read the splits it had finished at all.
	Progress func(bytesRead, docs int64)
	// ProgressSkipped, if set, is called instead of Progress with the bytes a
	// resumed run reads again to skip the documents of the shards it keeps (an
	// earlier run's work: a progress bar's AddSkipped, so that its MB/s and ETA are
	// this run's).
	ProgressSkipped func(bytesRead int64)
	// ProgressTokens, if set, is called with the tokens of each batch of documents as
	// it is written (for a tokens/s figure beside Progress's).
	ProgressTokens func(tokens int64)
	// OnShard, if set, is called after each shard is committed (and, with Resume,
	// journaled: a run killed from then on keeps it), with its manifest entry.
	OnShard func(info shards.ShardInfo)
	// PlanTokenizerFiles, if set, is called with the output's previous manifest (nil
	// where it holds none, or one that does not read), read once under the run's lock
	// for its check that the output is this job's, before that check and before any
	// shard is written; what it returns replaces TokenizerFiles, its error ends the
	// run. The command plans the tokenizer files it stores beside the dataset there
	// (cli.PlanTokenizerBeside), which then need not read the manifest again. It is
	// called once per Run, local parts included.
	PlanTokenizerFiles func(prev *shards.Manifest) ([]string, error)

	// Resume makes the run resumable (see JournalName): it keeps a journal in the
	// dataset directory, continues from a journal of the same job, and is a no-op that
	// reports AlreadyComplete when the directory already holds this job's finished
	// dataset (unless Overwrite). Its manifest's source records the job fingerprint
	// ("job"). Without Resume a run is what `tokenize run` has always been: it refuses
	// an existing dataset and leaves no journal.
	Resume bool
	// InputSHA256 optionally gives inputs' sha256 (hex, by input name); a resumable run
	// then identifies those inputs by content instead of by size and mtime.
	InputSHA256 map[string]string
	// Params are other settings that change the output (a filter's configuration, say):
	// part of the job fingerprint, so that changing them does not resume, and recorded
	// in the manifest's source ("params").
	Params map[string]string
	// FilterSet keeps only the records of one Pile subset (see prep.ReadOptions).
	FilterSet string
	// SkipBad skips bad records (a line that is not JSON, a text that is no string,
	// ...), counting them in the stats with examples (SplitStats.BadRecords), instead
	// of failing on the first one as `tokenize run` does.
	SkipBad bool
	// AcceptTruncated keeps what precedes the damage of a truncated or corrupt
	// compressed input and skips the rest of it (prep.ReadOptions.AcceptTruncated),
	// counting it in the stats (Truncated, UnreadBytes); without it such an input
	// fails the run.
	AcceptTruncated bool

	// NumWorkers, when positive, makes the run part WorkerIndex (from 0) of a
	// partitioned run of NumWorkers parts: one task of an array job (see
	// ResolveArrayTask). The part reads its slice of the inputs (Partition: whole
	// files, line-aligned byte ranges of uncompressed JSONL files, or every k-th stripe
	// of a compressed JSONL file it shares with k-1 other parts) and writes a
	// dataset of its own in Dir/parts/part-IIIII-of-WWWWW (shards.PartDir), its
	// manifest last, marked with shards.PartInfo; shards.MergeParts then lists every
	// part's shards in Dir/manifest.json, in the order of a single-process run. A part
	// is always resumable (Resume is implied): rerun after a kill, it keeps its
	// finished shards; rerun once finished, it does nothing (AlreadyComplete). A run
	// already merged in Dir is not redone either. Every part of a run must be given the
	// same inputs (names and sizes), tokenizer and settings.
	NumWorkers, WorkerIndex int
	// LocalParts, when more than 1, runs the job as a partitioned run of LocalParts
	// parts (see NumWorkers) that all run at once in this process, each with its share
	// of Workers and its own readers, and then merges them (shards.MergeParts): the
	// same documents in the same order, in the parts' shards. Several compressed
	// inputs are then read LocalParts at a time instead of one (see
	// SuggestLocalParts). Not with NumWorkers.
	LocalParts int

	hooks testHooks
	// stripeBytes is the stripe size of a partitioned run (0: DefaultStripeBytes):
	// tests make it small, so that small files have many stripes.
	stripeBytes int64

	// runTop, set by runLocalParts for its parts: the run's manifest, read once
	// for all of them (runPart reads it otherwise).
	runTop *readManifest

	// Set in the run of one part (runPart).
	partDesc    *jobDesc           // the part's job
	ranges      [][]prep.FileRange // per split, what the part reads
	rangeInputs [][]int            // per split, the input index of each range
	part        *shards.PartInfo   // for the part's manifest
	mergedDir   string             // the run's directory, whose merged manifest a part made again removes
}

// stripeSize is the run's stripe size (see Partition).
func (r *TokenizeRun) stripeSize() int64 {
	if r.stripeBytes > 0 {
		return r.stripeBytes
	}
	return DefaultStripeBytes
}

// testHooks let tests stop a run at chosen moments and fix its clock.
type testHooks struct {
	now func() time.Time
	// event is called with "doc" after each document is written, "commit" after each
	// shard is committed (before it is journaled), "journal" after each journal save,
	// and "manifest" once the manifest is written.
	event func(ev string)
}

func (r *TokenizeRun) event(ev string) {
	if r.hooks.event != nil {
		r.hooks.event(ev)
	}
}

// RunStats says what a run did and where its time went. Docs, Tokens and Shards count the
// dataset written (shards kept from an interrupted run included); Empty, Bad, Filtered,
// InvalidUTF8 and BytesIn what reading the inputs counted (all of them, also where a
// resumed run skips documents); TextBytes the text in the dataset's documents.
type RunStats struct {
	Docs, Empty, Tokens int64
	Bad                 int64 // bad records skipped (SkipBad)
	Filtered            int64 // records dropped by FilterSet (of another subset or without one)
	InvalidUTF8         int64 // documents whose invalid UTF-8 became U+FFFD
	Truncated           int64 // truncated or corrupt streams whose rest was skipped (AcceptTruncated)
	UnreadBytes         int64 // input bytes not read because of them
	// UnreadUnknown: some of the truncated streams are a finished dataset's, whose
	// manifest does not keep the bytes not read after them (UnreadBytes leaves them out).
	UnreadUnknown bool
	BytesIn       int64 // input bytes read, as stored (compressed)
	TextBytes     int64
	// RunTextBytes and RunTokens are this run's work: the text it encoded and the
	// tokens it made, without the kept shards' of a resumed run (the speeds divide
	// them by Elapsed).
	RunTextBytes, RunTokens int64
	Shards                  int
	Elapsed                 time.Duration
	// WriteTime is the time spent in shard writers (encoding ids to bytes, writing,
	// committing), which the goal keeps under 5% of Elapsed.
	WriteTime time.Duration
	Splits    []SplitStats // per split, in order

	// Resumption.
	AlreadyComplete bool // the dataset was already there, finished by the same job: nothing done
	// RecordsUnknown: AlreadyComplete, and the manifest does not keep the counts of bad,
	// empty, filtered and truncated records (an older gptkit made it): they are 0 here.
	RecordsUnknown bool
	ResumedShards  int    // shards kept from an interrupted run
	ResumedDocs    int64  // documents in them
	Restarted      string // why an interrupted run's journal was not used ("" if none was found or it was)

	// Partitioned runs (NumWorkers > 0).
	PartDir string // the part's directory relative to Dir (shards.PartDir); "" when not partitioned
	// AlreadyMerged: Dir already holds the run's merged dataset; the part did
	// nothing, and the manifest returned is the merged one.
	AlreadyMerged bool
}

// SplitStats are one split's RunStats. A split finished by an earlier run keeps its
// counts (and bad-record report) in the journal; TextBytes counts only what this run
// encoded when a kept shard of the split had to be redone.
type SplitStats struct {
	Split                              string
	Docs, Empty, Bad, Filtered, Tokens int64
	InvalidUTF8, BytesIn, TextBytes    int64
	RunTextBytes, RunTokens            int64 // as RunStats'
	Truncated, UnreadBytes             int64
	UnreadUnknown                      bool // as RunStats.UnreadUnknown
	Shards, ResumedShards              int
	ResumedDocs                        int64
	Elapsed, WriteTime                 time.Duration
	BadRecords                         *prep.BadRecordReport // nil: none
}

// readManifest is a manifest read (shards.ReadManifest), or its error.
type readManifest struct {
	m   *shards.Manifest
	err error
}

// planTokenizerFiles hands the output's previous manifest (m, read with error err)
// to PlanTokenizerFiles, if set, and takes the files it plans.
func (r *TokenizeRun) planTokenizerFiles(m *shards.Manifest, err error) error {
	if r.PlanTokenizerFiles == nil {
		return nil
	}
	if err != nil {
		m = nil
	}
	files, err := r.PlanTokenizerFiles(m)
	if err != nil {
		return err
	}
	r.TokenizerFiles = files
	return nil
}

// Run runs the job and returns the manifest it wrote.
func (r *TokenizeRun) Run(ctx context.Context) (*shards.Manifest, RunStats, error) {
	now := time.Now
	if r.hooks.now != nil {
		now = r.hooks.now
	}
	switch {
	case r.LocalParts > 1 && r.NumWorkers > 0:
		return nil, RunStats{}, errors.New("a run is either local parts (LocalParts) or a part of a partitioned run (NumWorkers), not both")
	case r.LocalParts > 1:
		return r.runLocalParts(ctx)
	case r.NumWorkers > 0:
		return r.runPart(ctx)
	}
	start := now()
	t0 := time.Now()
	var stats RunStats
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok := r.Tokenizer
	if r.AppendEOD && tok.EOD() < 0 {
		return nil, stats, fmt.Errorf("tokenizer %s has no end-of-document token; pass --append-eod=false", tok.Name())
	}
	if err := r.checkSplits(); err != nil {
		return nil, stats, err
	}
	dtype := shards.DTypeForVocab(tok.VocabSize())

	// One writer at a time: a second run into this directory fails here, naming the
	// first, instead of renaming its shards over the first's (see storage.LockDir).
	lock, err := storage.LockDir(ctx, r.Store, r.Dir, r.owner())
	if err != nil {
		return nil, stats, err
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

	var desc *jobDesc
	var job string
	if r.Resume {
		var err error
		if desc = r.partDesc; desc == nil {
			if desc, err = r.describeJob(dtype); err != nil {
				return nil, stats, err
			}
		}
		job = desc.fingerprint()
	}

	old, err := shards.ReadManifest(ctx, r.Store, r.Dir)
	if r.Resume && r.partDesc == nil {
		desc, job = r.earlierJob(ctx, desc, job, old)
	}
	if perr := r.planTokenizerFiles(old, err); perr != nil {
		return nil, stats, perr
	}
	sameJob := err == nil && r.Resume && (old.Source["job"] == job || r.samePart(old))
	damaged := "" // a finished dataset of this job that is no longer whole is made again
	if sameJob && !r.Overwrite {
		if perr := shards.CheckPresent(ctx, r.Store, r.Dir, old); perr != nil {
			damaged = perr.Error()
			log.Warn("the finished dataset is damaged: making it again", "dataset", r.where(), "problem", damaged)
		}
	}
	switch {
	case damaged != "":
	case sameJob && !r.Overwrite:
		if err := r.Store.Delete(ctx, r.journalKey()); err != nil { // left by a run killed after its manifest
			log.Warn("could not remove the journal", "err", err)
		}
		stats = ManifestStats(old)
		stats.AlreadyComplete, stats.Elapsed = true, time.Since(t0)
		log.Info("already complete", "dataset", r.where(), "docs", old.Documents, "tokens", old.Tokens, "shards", len(old.Shards))
		return old, stats, nil
	case err == nil && !r.Overwrite:
		other := ""
		if r.Resume {
			other = " made by a different job (other inputs, tokenizer or settings)"
			changed, cerr := desc.changedFrom(old, tok.Name(), r.part != nil)
			if cerr != nil {
				return nil, stats, cerr
			}
			if changed != "" {
				other = " made by a different job: " + changed
			}
		}
		return nil, stats, fmt.Errorf("%s already holds a dataset%s (manifest.json with %d documents); pass --overwrite to replace it or choose another --output", r.where(), other, old.Documents)
	case err != nil && !errors.Is(err, shards.ErrMissing):
		if !r.Overwrite {
			// Re-running the stage (the shards hint) is this: its way is --overwrite.
			if fe := (*shards.FormatError)(nil); errors.As(err, &fe) {
				named := *fe
				named.Hint = "the manifest is damaged: restore it, or pass --overwrite to make the dataset again over it"
				return nil, stats, &named
			}
			return nil, stats, err
		}
	}
	// A dataset made again (--overwrite, or a damaged one of this job) loses its
	// manifest before the first shard is written: its shards are replaced under the
	// same names, and a run that fails part way must leave no manifest over shards that
	// no longer match it. The new manifest is then written as a new one (a broken one,
	// which has no version to match, is replaced too), and once it is, the replaced
	// dataset's shards it does not list are removed.
	var replaced *shards.Manifest
	if err == nil || !errors.Is(err, shards.ErrMissing) {
		if err == nil {
			replaced = old
		}
		if r.part != nil {
			// A part made again: the run's merged manifest goes too, now that this
			// part's lock is held (a merge holds every part's while it writes one):
			// one written by a merge since runPart removed it lists this part's old
			// shards.
			if derr := r.Store.Delete(ctx, shards.ManifestKey(r.mergedDir)); derr != nil && !errors.Is(derr, storage.ErrNotExist) {
				return nil, stats, fmt.Errorf("make part %d of %d again: remove the run's merged manifest %s: %w", r.part.Index, r.part.Count, shards.ManifestKey(r.mergedDir), derr)
			}
		}
		if derr := r.Store.Delete(ctx, shards.ManifestKey(r.Dir)); derr != nil {
			return nil, stats, fmt.Errorf("replace the dataset in %s: remove its manifest: %w", r.where(), derr)
		}
		log.Info("replacing the dataset: its manifest is removed until the new one is written", "dataset", r.where())
		old = nil
	}

	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var j *journal
	// An earlier run of this dataset left its journal (it was killed, or failed):
	// its shards the new manifest will not list are removed once it is written.
	_, jerr := r.Store.Stat(ctx, r.journalKey())
	earlier := jerr == nil
	if r.Resume {
		var restarted string
		if j, restarted, err = r.resumeJournal(ctx, desc, job, dtype, workers, start, sameJob, log); err != nil {
			return nil, stats, err
		}
		if damaged != "" {
			restarted = "the finished dataset is damaged (" + damaged + ")"
		}
		if stats.Restarted = restarted; restarted != "" {
			log.Warn("not resuming: starting over", "dataset", r.where(), "why", restarted)
		} else if shardsKept, docsKept := j.kept(); shardsKept > 0 {
			log.Info("resuming", "dataset", r.where(), "shards_kept", shardsKept, "docs_kept", docsKept)
		}
	} else {
		j = newJournal(r, nil, "", start)
	}
	m := r.newManifest(j, dtype)
	if desc != nil {
		// What a rerun that finds the job changed names (an input's size or time).
		m.Source["job_inputs"] = desc.inputList()
		m.Source["job_settings"] = desc.settings()
	}
	if old != nil {
		m.ETag = old.ETag
	}

	for i, sp := range r.splits() {
		ranges, inputIdx := wholeRanges(sp.Inputs), []int(nil)
		if r.ranges != nil {
			ranges, inputIdx = r.ranges[i], r.rangeInputs[i]
		}
		ss, err := r.runSplit(ctx, j, j.Splits[i], ranges, inputIdx, dtype, workers, lock, log)
		stats.add(ss)
		if err != nil {
			return nil, stats, err
		}
		for _, info := range j.Splits[i].Shards {
			if err := m.Add("", info); err != nil {
				return nil, stats, err
			}
		}
	}
	tw := time.Now()
	if err := lock.Check(); err != nil {
		return nil, stats, err
	}
	if stats.Docs == 0 && r.NumWorkers <= 0 && r.part == nil {
		// A dataset of nothing is a mistake (a wrong path, an empty download, a
		// --filter-set that matches no record), not a result: no manifest. (A part
		// of a partitioned run may hold none.)
		return nil, stats, fmt.Errorf("no documents in the inputs of %s (records: %d empty, %d bad, %d filtered out; %d bytes read): check the input files, the text key and the filter", r.where(), stats.Empty, stats.Bad, stats.Filtered, stats.BytesIn)
	}
	m.Records = manifestRecords(stats)
	if err := shards.WriteManifest(ctx, r.Store, r.Dir, m); err != nil {
		return nil, stats, err
	}
	r.event("manifest")
	r.removeReplacedShards(ctx, replaced, m, earlier || replaced != nil || damaged != "", log)
	if r.Resume {
		if err := r.Store.Delete(ctx, r.journalKey()); err != nil {
			log.Warn("could not remove the journal (the next run ignores it)", "err", err)
		}
	}
	stats.WriteTime += time.Since(tw)
	stats.Elapsed = time.Since(t0)
	log.Info("tokenize run done", "dataset", r.where(), "docs", stats.Docs, "empty_dropped", stats.Empty,
		"tokens", stats.Tokens, "shards", stats.Shards, "elapsed_s", stats.Elapsed.Seconds(),
		"write_share", stats.WriteTime.Seconds()/max(stats.Elapsed.Seconds(), 1e-9))
	return m, stats, nil
}

// newManifest starts the run's manifest, its provenance in source: the inputs (and, with
// Splits, each split's), the command, the tokenizer's spec, append_eod, the time the job
// first started and, with Resume, the job fingerprint.
func (r *TokenizeRun) newManifest(j *journal, dtype shards.DType) *shards.Manifest {
	tok := r.Tokenizer
	src := shards.NewSource(r.allInputs(), r.Command)
	src["created"] = j.Created
	src["tokenizer_spec"] = r.TokSpec
	if len(r.TokenizerFiles) > 0 {
		src[shards.SourceTokenizerFiles] = r.TokenizerFiles
	}
	src["append_eod"] = r.AppendEOD
	if len(r.Splits) > 0 {
		sp := map[string][]string{}
		for _, s := range r.Splits {
			sp[trainName(s.Split)] = s.Inputs
		}
		src["splits"] = sp
	}
	if j.Job != "" {
		src["job"] = j.Job
	}
	if len(r.Params) > 0 {
		src["params"] = r.Params // what a caller (prep) compares before it has the inputs
	}
	fp := tok.Fingerprint()
	if r.part != nil && j.Desc != nil && j.Desc.Tokenizer != "" {
		// A part of a run made with the tokenizer's earlier fingerprint (earlierPart)
		// records it, as the run's other parts do: merge-parts compares them.
		fp = j.Desc.Tokenizer
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: tok.Name(), Fingerprint: fp, VocabSize: tok.VocabSize(), EODID: tok.EOD()}, dtype, src)
	m.Part = r.part
	return m
}

// runSplit writes one split, continuing after its journaled shards, and journals each
// shard it commits. A split the journal says is done is not read again. inputIdx gives
// the index among the split's inputs of each striped range's file.
func (r *TokenizeRun) runSplit(ctx context.Context, j *journal, js *journalSplit, inputs []prep.FileRange, inputIdx []int, dtype shards.DType, workers int, lock *storage.Lock, log *slog.Logger) (SplitStats, error) {
	t0 := time.Now()
	ss := SplitStats{Split: js.Split, ResumedShards: len(js.Shards), ResumedDocs: js.Docs}
	for _, info := range js.Shards {
		ss.Tokens += info.Tokens
	}
	if js.Done {
		ss.Docs, ss.TextBytes, ss.Shards = js.Docs, js.TextBytes, len(js.Shards)
		ss.setRead(js.Read)
		ss.Elapsed = time.Since(t0)
		return ss, nil
	}
	rot := &shardRotator{st: r.Store, dir: r.Dir, name: r.Name, split: js.Split, dtype: dtype,
		shardBytes: r.ShardBytes, next: len(js.Shards), ranges: inputs, inputIdx: inputIdx, check: lock.Check}
	rot.committed = func(info shards.ShardInfo, textBytes int64) error {
		r.event("commit")
		js.Shards = append(js.Shards, info)
		js.Docs += info.Documents
		js.TextBytes += textBytes
		if err := j.save(ctx, r.Store); err != nil {
			return err
		}
		if j.key != "" {
			r.event("journal")
		}
		if r.OnShard != nil {
			r.OnShard(info)
		}
		return nil
	}
	keptText := js.TextBytes
	read, tokens, writeTime, err := r.encodeSplit(ctx, inputs, js.Docs, workers, rot)
	ss.Docs, ss.Tokens, ss.Shards, ss.TextBytes = js.Docs, ss.Tokens+tokens, len(js.Shards), keptText+read.TextBytes
	ss.RunTextBytes, ss.RunTokens = read.TextBytes, tokens
	counts := &readCounts{Empty: read.Empty, Bad: read.Bad, Filtered: read.Filtered,
		InvalidUTF8: read.InvalidUTF8, BytesIn: read.Bytes, BadRecords: read.BadRecords,
		Truncated: read.Truncated, UnreadBytes: read.UnreadBytes}
	ss.setRead(counts)
	ss.WriteTime = writeTime
	if err != nil {
		ss.Elapsed = time.Since(t0)
		return ss, err
	}
	js.Done, js.Read = true, counts
	tw := time.Now()
	if err := j.save(ctx, r.Store); err != nil {
		return ss, err
	}
	if j.key != "" {
		r.event("journal")
	}
	ss.WriteTime += time.Since(tw)
	ss.Elapsed = time.Since(t0)
	if len(r.Splits) > 0 {
		log.Info("split done", "dataset", r.where(), "split", js.Split, "docs", ss.Docs, "empty_dropped", ss.Empty,
			"bad_skipped", ss.Bad, "tokens", ss.Tokens, "shards", ss.Shards, "elapsed_s", ss.Elapsed.Seconds())
	}
	return ss, nil
}

func (ss *SplitStats) setRead(c *readCounts) {
	if c == nil {
		return
	}
	ss.Empty, ss.Bad, ss.Filtered, ss.InvalidUTF8, ss.BytesIn, ss.BadRecords = c.Empty, c.Bad, c.Filtered, c.InvalidUTF8, c.BytesIn, c.BadRecords
	ss.Truncated, ss.UnreadBytes = c.Truncated, c.UnreadBytes
}

// add counts a split into the run's totals.
func (s *RunStats) add(ss SplitStats) {
	s.Splits = append(s.Splits, ss)
	s.Docs += ss.Docs
	s.Empty += ss.Empty
	s.Bad += ss.Bad
	s.Filtered += ss.Filtered
	s.InvalidUTF8 += ss.InvalidUTF8
	s.Truncated += ss.Truncated
	s.UnreadBytes += ss.UnreadBytes
	s.UnreadUnknown = s.UnreadUnknown || ss.UnreadUnknown
	s.Tokens += ss.Tokens
	s.BytesIn += ss.BytesIn
	s.TextBytes += ss.TextBytes
	s.RunTextBytes += ss.RunTextBytes
	s.RunTokens += ss.RunTokens
	s.Shards += ss.Shards
	s.WriteTime += ss.WriteTime
	s.ResumedShards += ss.ResumedShards
	s.ResumedDocs += ss.ResumedDocs
}

// ManifestStats are the stats of a finished dataset, as a run that finds it complete
// reports them: its documents, tokens and shards, and the counts of its records (bad,
// empty, ...) when the manifest keeps them (RecordsUnknown when not: an older gptkit
// made it).
func ManifestStats(m *shards.Manifest) RunStats {
	var splits []SplitStats
	at := func(split string) *SplitStats {
		for i := range splits {
			if splits[i].Split == split {
				return &splits[i]
			}
		}
		splits = append(splits, SplitStats{Split: split})
		return &splits[len(splits)-1]
	}
	for _, rec := range m.Records { // first: they list every split in the run's order
		ss := at(rec.Split)
		ss.Empty, ss.Bad, ss.Filtered, ss.InvalidUTF8, ss.Truncated = rec.Empty, rec.Bad, rec.Filtered, rec.InvalidUTF8, rec.Truncated
		ss.UnreadUnknown = rec.Truncated > 0
		if len(rec.BadReasons) > 0 {
			ss.BadRecords = &prep.BadRecordReport{Counts: maps.Clone(rec.BadReasons)}
		}
	}
	for _, info := range m.Shards {
		ss := at(info.Split)
		ss.Docs += info.Documents
		ss.Tokens += info.Tokens
		ss.Shards++
	}
	var s RunStats
	for _, ss := range splits {
		s.add(ss)
	}
	s.RecordsUnknown = m.Records == nil && len(m.Shards) > 0
	return s
}

// manifestRecords are the counts of a run's records that its manifest keeps
// (shards.Manifest.Records), split by split: the dataset's, the same for a run resumed
// or not, partitioned or not (the bytes it read, tokenized, or left unread after damage
// are the run's own, and are not kept).
func manifestRecords(s RunStats) []shards.SplitRecords {
	out := []shards.SplitRecords{}
	for _, ss := range s.Splits {
		rec := shards.SplitRecords{Split: ss.Split, Empty: ss.Empty, Bad: ss.Bad, Filtered: ss.Filtered, InvalidUTF8: ss.InvalidUTF8,
			Truncated: ss.Truncated}
		if ss.BadRecords != nil && len(ss.BadRecords.Counts) > 0 {
			rec.BadReasons = maps.Clone(ss.BadRecords.Counts)
		}
		out = append(out, rec)
	}
	return out
}

// allInputs lists every split's inputs, in order.
func (r *TokenizeRun) allInputs() []string {
	if len(r.Splits) == 0 {
		return r.Inputs
	}
	var all []string
	for _, s := range r.Splits {
		all = append(all, s.Inputs...)
	}
	return all
}

// owner describes this run for the writer lock, which a second writer's error quotes.
func (r *TokenizeRun) owner() string {
	if r.Command == "" {
		return storage.LockOwner("a gptkit run of " + r.Name)
	}
	return storage.LockOwner(r.Command)
}

func (r *TokenizeRun) where() string {
	if r.Dir == "" {
		return r.Store.String()
	}
	return r.Store.String() + "/" + r.Dir
}

// removeReplacedShards removes the files of the shards of replaced, the dataset this
// run made again, that m, its new manifest, does not list (a smaller --shard-size
// before, say), so that the directory holds one dataset and `shards verify` finds
// no leftovers. A failure only warns: the new dataset is complete.
func (r *TokenizeRun) removeReplacedShards(ctx context.Context, replaced, m *shards.Manifest, earlier bool, log *slog.Logger) {
	keep := map[string]bool{}
	for _, s := range m.Shards {
		keep[shards.ShardKey(r.Dir, s)] = true
	}
	if earlier {
		r.removeStrayShards(ctx, keep, log)
	}
	if replaced == nil {
		return
	}
	partDirs := map[string]bool{} // a merged dataset's parts, whose manifests go too
	for _, s := range replaced.Shards {
		key := shards.ShardKey(r.Dir, s)
		if keep[key] {
			continue
		}
		if rest, ok := strings.CutPrefix(s.Prefix, shards.PartsDir+"/"); ok {
			if dir, _, ok := strings.Cut(rest, "/"); ok {
				partDirs[shards.PartsDir+"/"+dir] = true
			}
		}
		for _, ext := range []string{".bin", ".idx"} {
			if err := r.Store.Delete(ctx, key+ext); err != nil && !errors.Is(err, storage.ErrNotExist) {
				log.Warn("could not remove a shard of the replaced dataset", "key", key+ext, "err", err)
			}
		}
	}
	// Their manifests would name shards no longer there (merge-parts would fail on
	// them, and a partitioned rerun take them for finished parts).
	for dir := range partDirs {
		key := shards.ManifestKey(joinKey(r.Dir, dir))
		if err := r.Store.Delete(ctx, key); err != nil && !errors.Is(err, storage.ErrNotExist) {
			log.Warn("could not remove a part's manifest of the replaced dataset", "key", key, "err", err)
		}
	}
}

// removeStrayShards removes the files in r.Dir named as this run's shards are
// (NAME_text_document, NAME_SPLIT_text_document_NNN, .bin and .idx, of r's
// splits) that keep, the new manifest's, does not list: shards of a run this one
// started over from (its journal did not match), or of a replaced dataset whose
// manifest an interrupted --overwrite had already removed. Called only where an
// earlier run wrote (a journal, a manifest); other files are left alone.
func (r *TokenizeRun) removeStrayShards(ctx context.Context, keep map[string]bool, log *slog.Logger) {
	prefix := ""
	if d := strings.Trim(r.Dir, "/"); d != "" {
		prefix = d + "/"
	}
	// Every shard's name starts with the run's: listing only those keys keeps a run
	// at an S3 bucket's root (or beside a large tree) from listing all of it.
	infos, err := r.Store.List(ctx, prefix+r.Name)
	if err != nil {
		log.Warn("could not list the dataset's directory for the shards of an earlier run", "err", err)
		return
	}
	for _, in := range infos {
		rest := strings.TrimPrefix(in.Key, prefix)
		ext := path.Ext(rest)
		if strings.Contains(rest, "/") || ext != ".bin" && ext != ".idx" || keep[strings.TrimSuffix(in.Key, ext)] || !r.shardName(strings.TrimSuffix(rest, ext)) {
			continue
		}
		log.Info("removing a shard file of an earlier run that the new manifest does not list", "key", in.Key)
		if err := r.Store.Delete(ctx, in.Key); err != nil && !errors.Is(err, storage.ErrNotExist) {
			log.Warn("could not remove a shard of an earlier run", "key", in.Key, "err", err)
		}
	}
}

// shardName reports whether base is named as a shard of one of r's splits is
// (ShardPrefix: NAME[_SPLIT]_text_document, then _NNN): not another name's
// (a_b_text_document is not --name a's), nor a split r does not write.
func (r *TokenizeRun) shardName(base string) bool {
	for _, sp := range r.splits() {
		first := ShardPrefix(r.Name, sp.Split, 0)
		if base == first {
			return true
		}
		digits, ok := strings.CutPrefix(base, first+"_")
		if ok && len(digits) >= 3 && strings.Trim(digits, "0123456789") == "" {
			return true
		}
	}
	return false
}

// samePart reports whether old is the manifest of the part r runs, finished by the
// same run (the same run-wide job, index and count). A part's own job identifies its
// inputs by size and modification time too, which the run's leaves out (nodes read
// their own copies of the inputs) and shards.MergeParts does not check: so a finished
// part is not refused, or made again, for an input's mtime alone. (A part stopped part
// way resumes only with its own job the same.)
func (r *TokenizeRun) samePart(old *shards.Manifest) bool {
	return r.part != nil && old.Part != nil && old.Part.Job == r.part.Job &&
		old.Part.Index == r.part.Index && old.Part.Count == r.part.Count
}

// earlierJob is desc and job as a run of it made before the built-in gpt2 or r50k_base
// was loaded from its .tiktoken rank file as the built-in described them (the rank
// file's own fingerprint: spec.EarlierFingerprint), where the finished dataset old or
// the journal of a killed run records that job: the same ids for every text, so a rerun
// with the same --tokenizer finds its dataset complete or resumes it, rather than
// refusing it as another job's or starting over. Else desc and job.
func (r *TokenizeRun) earlierJob(ctx context.Context, desc *jobDesc, job string, old *shards.Manifest) (*jobDesc, string) {
	recorded := "" // the job the dataset or its journal records, when not this one
	if old != nil {
		if s, _ := old.Source["job"].(string); s != job {
			recorded = s
		}
	} else if j, err := loadJournal(ctx, r.Store, r.journalKey()); err == nil && j.Job != job {
		recorded = j.Job
	}
	if recorded == "" {
		return desc, job
	}
	if earlier := r.earlierDesc(desc, (*jobDesc).fingerprint, recorded); earlier != nil {
		return earlier, earlier.fingerprint()
	}
	return desc, job
}

// earlierDesc is desc with the tokenizer's earlier fingerprint (spec.EarlierFingerprint)
// where job of it is one of recorded (the jobs a dataset, part or journal records);
// else nil.
func (r *TokenizeRun) earlierDesc(desc *jobDesc, job func(*jobDesc) string, recorded ...string) *jobDesc {
	fp := spec.EarlierFingerprint(r.Tokenizer) // some 50 ms: only where a job differs
	if fp == "" {
		return nil
	}
	earlier := *desc
	earlier.Tokenizer = fp
	ej := job(&earlier)
	for _, rec := range recorded {
		if rec != "" && rec == ej {
			return &earlier
		}
	}
	return nil
}
