package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"gptkit/internal/cli"
	"gptkit/internal/fetch"
	"gptkit/internal/progress"
	"gptkit/internal/redact"
	"gptkit/pipelines"
	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// job is one `prep` run: files to fetch, then splits to tokenize into a dataset.
type job struct {
	name    string
	flags   *jobFlags
	command string
	log     *slog.Logger
	stdout  io.Writer
	stderr  io.Writer
	// sub and flagSet are the command as parsed (the corpus name or "custom", and its
	// flags), which --slurm writes into its scripts.
	sub     string
	flagSet *flag.FlagSet

	fetches []fetch.File
	// beforeFetch, if set, runs once before the first download (it fetches the mirror's
	// SHA256SUMS: a finished dataset asks the network nothing).
	beforeFetch func(ctx context.Context) error
	// splits gives each split's inputs once the files are fetched (the Shakespeare
	// corpus first cuts its text 90/10 into two files).
	splits func(ctx context.Context) ([]pipelines.SplitInputs, error)
	// tokenizer loads the tokenizer; st is the output store (which may hold a finished
	// dataset).
	tokenizer func(ctx context.Context, st storage.Store) (*tokenize.Tokenizer, string, error)
	appendEOD bool
	// inputs name the job's inputs as the user gave them (a local file with its size
	// and modification time), for settings.
	inputs []string
}

// settings are what decides the dataset besides the tokenizer (whose fingerprint the
// manifest records): recorded in the manifest (source.params, see
// pipelines.TokenizeRun.Params), so that a rerun with other settings is told so even
// once the downloads are gone, and credentials-free (the manifest redacts them).
func (j *job) settings() map[string]string {
	f := j.flags
	shardBytes, _ := cli.ParseSize(f.shardSize)
	return map[string]string{
		"corpus":           j.sub,
		"inputs":           redact.String(strings.Join(j.inputs, "\n")),
		"text_key":         f.textKey,
		"filter_set":       f.filterSet,
		"shard_size":       fmt.Sprint(shardBytes),
		"append_eod":       fmt.Sprint(j.appendEOD),
		"accept_truncated": fmt.Sprint(f.acceptTrunc),
	}
}

// settingsChanged says how the settings recorded in a finished dataset's manifest differ
// from this run's ("" when they do not); ok is false for a manifest without them (made
// by an older gptkit).
func (j *job) settingsChanged(m *shards.Manifest) (diff string, ok bool) {
	rec, isMap := m.Source["params"].(map[string]any)
	if !isMap {
		return "", false
	}
	now := j.settings()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		was, _ := rec[k].(string)
		if was != now[k] {
			out = append(out, fmt.Sprintf("%s %q → %q", k, was, now[k]))
		}
	}
	return strings.Join(out, "; "), true
}

// localInput names a local input file by its path, size and modification time.
func localInput(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s (%d bytes, modified %s)", path, fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
}

// workDir is DIR/NAME: the local dataset directory and the downloads' parent.
func (j *job) workDir() string { return filepath.Join(j.flags.dir, j.name) }

// output is where the dataset goes: DIR/NAME, or DEST/NAME with --dest.
func (j *job) output() string {
	if j.flags.dest != "" {
		return strings.TrimRight(j.flags.dest, "/") + "/" + j.name
	}
	return j.workDir()
}

// checkEOD refuses a tokenizer without the end-of-document id the job appends to every
// document. (The pipeline's own message names --append-eod, which only prep custom has.)
func (j *job) checkEOD(tok *tokenize.Tokenizer) error {
	if !j.appendEOD || tok.EOD() >= 0 {
		return nil
	}
	hint := "choose a --tokenizer that has one (gpt2, neox-20b, ...)"
	if j.sub == "custom" {
		hint = "pass --append-eod=false to write the documents without one, or choose a --tokenizer that has one"
	}
	return fmt.Errorf("tokenizer %s has no end-of-document token to put after each document: %s", tok.Name(), hint)
}

// run fetches, tokenizes, reports; it returns the exit status.
func (j *job) run(ctx context.Context) int {
	f := j.flags
	who := "prep " + j.name
	if f.slurm {
		return j.submitSlurm(ctx)
	}
	st, err := f.s3.Open(ctx, j.output(), j.log)
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	if f.mergeParts {
		return j.merge(ctx, st)
	}
	tok, tokSpec, err := j.tokenizer(ctx, st)
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	if err := j.checkEOD(tok); err != nil { // before anything is downloaded
		return cli.Fail(j.stderr, who, err)
	}
	// A finished dataset of this job (tokenizer and settings), still whole: nothing to
	// do, and its downloads may be gone. Made with other settings: refused, as `tokenize
	// run` refuses. Damaged (a shard missing or cut short): made again.
	redo := false
	if m, err := shards.ReadManifest(ctx, st, ""); err == nil && !f.overwrite {
		if m.Tokenizer.Fingerprint != tok.Fingerprint() {
			return cli.Fail(j.stderr, who, fmt.Errorf("%s already holds a dataset made with tokenizer %s (fingerprint %.12s); pass --overwrite to replace it", j.output(), m.Tokenizer.Name, m.Tokenizer.Fingerprint))
		}
		if diff, ok := j.settingsChanged(m); ok {
			if diff != "" {
				return cli.Fail(j.stderr, who, fmt.Errorf("%s already holds a dataset made with other settings (%s); pass --overwrite to replace it, or choose another -d/--dest", j.output(), diff))
			}
			if perr := shards.CheckPresent(ctx, st, "", m); perr != nil {
				j.log.Warn("the finished dataset is damaged: making it again", "dataset", j.output(), "problem", cli.OneLine(perr.Error()))
				redo = true
			} else {
				fmt.Fprintf(j.stdout, "%s/manifest.json: already complete: %d documents, %d tokens, %d shards\n", j.output(), m.Documents, m.Tokens, len(m.Shards))
				return j.checkFinishedErrorRate(pipelines.ManifestStats(m), "prep-report.json")
			}
		}
		// A manifest without settings (an older gptkit): the run below compares the
		// job's fingerprint once the inputs are there.
	}

	if f.dest != "" && !f.partitioned && j.hasDownloads() {
		// The dataset goes elsewhere than the downloads (a bucket): the writer lock
		// that the tokenizing takes, taken now too, so that credentials that cannot
		// write (or another writer) fail before the corpus is downloaded rather than
		// after. (An array job's tasks each lock their own part: not here.)
		lock, err := storage.LockDir(ctx, st, "", storage.LockOwner(j.command))
		if err != nil {
			return cli.Fail(j.stderr, who, fmt.Errorf("%w (found before downloading anything)", err))
		}
		lock.Release()
	}
	if err := j.fetch(ctx); err != nil {
		return cli.Fail(j.stderr, who, cli.InterruptedResumable(ctx, err))
	}
	splits, err := j.splits(ctx)
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	shardBytes, _ := cli.ParseSize(f.shardSize)
	// A tokenizer of local files (prep shakespeare's chars.json, a --tokenizer
	// tokenizer.json) has no name that shards cat --decode, train sample or export
	// could load it by: its files go beside the data, before the tokenizing, so that
	// the manifest is still written last, and lists them. The run plans and stores
	// them under its lock, with the previous manifest it reads for its own check (it
	// was read once more here), before any shard: a file of the user's in the way is
	// refused first.
	storeBeside := func(prev *shards.Manifest) ([]string, error) {
		keys, _, err := cli.StoreTokenizerBeside(ctx, st, f.tok.Spec, tok, prev, j.log)
		return keys, err
	}
	run := &pipelines.TokenizeRun{
		Splits: splits, Store: st, Name: j.name, Tokenizer: tok, TokSpec: tokSpec, PlanTokenizerFiles: storeBeside, TextKey: f.textKey,
		AppendEOD: j.appendEOD, Workers: f.workers, ShardBytes: shardBytes, Overwrite: f.overwrite || redo, Params: j.settings(),
		Command: j.command, Logger: j.log, Resume: true, FilterSet: f.filterSet, SkipBad: f.onError == "skip",
		AcceptTruncated: f.acceptTrunc,
		OnShard: func(info shards.ShardInfo) {
			j.log.Debug("shard written", "shard", info.Prefix, "docs", info.Documents, "tokens", info.Tokens)
			if testShardHook != nil {
				testShardHook(info)
			}
		},
	}
	if redo && !f.overwrite && (f.partitioned || f.localParts > 1) {
		// A damaged merged dataset: only its manifest goes. Each part checks its own
		// shards and makes only a damaged one again (Overwrite would redo them all).
		if err := st.Delete(ctx, shards.ManifestKey("")); err != nil {
			return cli.Fail(j.stderr, who, fmt.Errorf("unpublish the damaged dataset: %w", err))
		}
		run.Overwrite = false
	}
	switch {
	case f.partitioned:
		run.NumWorkers, run.WorkerIndex = f.task.Count, f.task.Index
		j.log.Info("partitioned run", "part", f.task.Index, "of", f.task.Count, "index_from", f.task.IndexFrom, "count_from", f.task.CountFrom)
	case f.localParts > 1:
		run.LocalParts = f.localParts
	default:
		var inputs []string
		for _, s := range splits {
			inputs = append(inputs, s.Inputs...)
		}
		if k := pipelines.SuggestLocalParts(inputs, f.workers); k > 1 {
			j.log.Info("several compressed inputs are read one at a time, which keeps about 5 workers busy", "workers", f.workers, "hint", fmt.Sprintf("--parts %d reads %d at once", k, k))
		}
	}
	_, total, err := run.Slice()
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	bar := j.bar("tokenize", total, progress.Options{})
	run.Progress = func(bytes, docs int64) { bar.Add(bytes, docs) }
	run.ProgressSkipped = bar.AddSkipped // a resumed run's kept documents: not in the MB/s or ETA
	run.ProgressTokens = bar.AddTokens
	m, stats, err := run.Run(ctx)
	if err != nil {
		bar.Stop()
		return cli.Fail(j.stderr, who, j.writeHint(j.corruptDownloadHint(cli.InterruptedResumable(ctx, err))))
	}
	bar.Done()
	where, report := j.output(), "prep-report.json"
	if f.partitioned && !stats.AlreadyMerged {
		// The other parts still need the downloads: the merge removes them.
		where += "/" + stats.PartDir
		report = "prep-report-" + path.Base(stats.PartDir) + ".json"
	} else {
		j.removeDownloads()
	}
	reportPath := filepath.Join(j.workDir(), report)
	if !stats.AlreadyComplete || !anyFile(reportPath) {
		// (A run that found its part finished keeps the report of the run that made
		// it, examples and all: its own stats have the counts only.)
		if reportPath, err = j.writeReport(report, stats); err != nil {
			j.log.Warn("could not write the bad-record report", "err", err)
		}
	}
	io.WriteString(j.stderr, stats.Summary(where, reportPath))
	if f.partitioned && !stats.AlreadyMerged {
		fmt.Fprintf(j.stderr, "part %d of %d done; once every part is: prep %s ... --merge-parts (or shards merge-parts %s)\n", f.task.Index, f.task.Count, j.sub, j.output())
	}
	fmt.Fprintf(j.stdout, "%s/manifest.json: %d documents, %d tokens, %d shards\n", where, m.Documents, m.Tokens, len(m.Shards))
	if stats.AlreadyComplete {
		// A part (or the merged run) an earlier task finished: checked as a rerun of a
		// finished dataset is.
		reports := path.Base(reportPath)
		if stats.AlreadyMerged {
			reports = "prep-report-part-*.json"
		}
		return j.checkFinishedErrorRate(stats, reports)
	}
	if rate := errorRate(stats); rate > f.maxErrorRate {
		return cli.Fail(j.stderr, who, fmt.Errorf("%d of %d records were bad (%.2f%% > --max-error-rate %.2f%%); the dataset was written, the bad records are listed in %s",
			stats.Bad, records(stats), 100*rate, 100*f.maxErrorRate, reportPath))
	}
	return cli.ExitOK
}

// checkFinishedErrorRate is the --max-error-rate check of a run that found its dataset
// (or, merging, its parts) already made: with the counts the manifest keeps, it exits
// as the run that made the dataset did, so a rerun of a job that failed for its bad
// records fails again (a higher --max-error-rate accepts the dataset). The examples are
// in the reports the making runs wrote next to the dataset (report: a glob of their
// names).
func (j *job) checkFinishedErrorRate(stats pipelines.RunStats, report string) int {
	if stats.RecordsUnknown {
		j.log.Warn("the dataset's manifest does not keep its counts of bad records (an older gptkit made it): --max-error-rate not checked", "dataset", j.output())
		return cli.ExitOK
	}
	if j.flags.onError == "fail" && stats.Bad > 0 {
		// (--on-error is no setting of the dataset: a run with fail would have stopped
		// at the first bad record.)
		return cli.Fail(j.stderr, "prep "+j.name, fmt.Errorf("%d records were bad when the dataset was made (with --on-error skip), and --on-error fail accepts none; pass --on-error skip to accept it, or --overwrite to make it again and stop at the first", stats.Bad))
	}
	rate := errorRate(stats)
	if rate <= j.flags.maxErrorRate {
		return cli.ExitOK
	}
	where := "the reports of the runs that made it"
	if p := filepath.Join(j.workDir(), report); anyFile(p) {
		where = p
	}
	return cli.Fail(j.stderr, "prep "+j.name, fmt.Errorf("%d of %d records were bad (%.2f%% > --max-error-rate %.2f%%) when the dataset was made; it is there, the bad records are listed in %s (pass a higher --max-error-rate to accept it)",
		stats.Bad, records(stats), 100*rate, 100*j.flags.maxErrorRate, where))
}

// anyFile reports whether pattern (filepath.Glob's) names a file.
func anyFile(pattern string) bool {
	found, err := filepath.Glob(pattern)
	return err == nil && len(found) > 0
}

// removeDownloads removes DIR/NAME/downloads/ unless --keep-downloads.
func (j *job) removeDownloads() {
	if j.flags.keepDownloads {
		return
	}
	if err := os.RemoveAll(filepath.Join(j.workDir(), "downloads")); err != nil {
		j.log.Warn("could not remove the downloads", "err", err)
	}
}

// writeHint adds the next step to a failure of this machine's disk while the dataset
// was written (a full disk, a read-only directory): the downloads say theirs (fetch),
// the shards said only "no space left on device". A file read for its documents (an
// --input without read permission) is not the dataset's disk: its error is left alone.
func (j *job) writeHint(err error) error {
	if fe := (*prep.FileError)(nil); errors.As(err, &fe) {
		return err
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w (free space on the disk of %s, or pass --dest to write the dataset elsewhere, then rerun: it keeps the finished shards)", err, j.output())
	case errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w (make %s writable, or pass --dest to write the dataset elsewhere, then rerun: it keeps the finished shards)", err, j.output())
	}
	return err
}

// corruptDownloadHint replaces the next step of a truncated or corrupt file that prep
// downloaded itself: "download it again" meant nothing to do, since a rerun found the
// file in place (its download finished, its format's first bytes right) and failed on
// it the same way; the file must go first.
func (j *job) corruptDownloadHint(err error) error {
	var fe *prep.FileError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Hint, prep.HintCorrupt) || !j.downloaded(fe.File) {
		return err
	}
	fe.Hint = "the file may be truncated or corrupt: remove it and rerun to download it again" + strings.TrimPrefix(fe.Hint, prep.HintCorrupt)
	return err
}

// downloaded reports whether file is one of the job's downloads.
func (j *job) downloaded(file string) bool {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false
	}
	for _, f := range j.fetches {
		if d, err := filepath.Abs(f.Dest); err == nil && d == abs {
			return true
		}
	}
	return false
}

// testShardHook, if set (by tests), is called after each shard a run commits.
var testShardHook func(info shards.ShardInfo)

// errorRate is the share of bad records among all the records read, as
// prep.Stats.ErrorRate defines what --max-error-rate checks: records of other subsets
// (--filter-set) and empty ones count as good.
func errorRate(s pipelines.RunStats) float64 {
	if s.Bad == 0 {
		return 0
	}
	return float64(s.Bad) / float64(records(s))
}

// records counts the records read: documents kept, empty, filtered out and bad.
func records(s pipelines.RunStats) int64 { return s.Docs + s.Empty + s.Filtered + s.Bad }

// fetch downloads the job's files (resuming .part files), verified before use.
func (j *job) fetch(ctx context.Context) error {
	if j.beforeFetch != nil {
		before := j.beforeFetch
		j.beforeFetch = nil
		if err := before(ctx); err != nil {
			return err
		}
	}
	if len(j.fetches) == 0 {
		return nil
	}
	// The bar counts the bytes this run downloads, against the sizes the plan found
	// (the server's where the catalog has none): a resumed .part's bytes and the files
	// in place are not this run's, so neither the MB/s nor the ETA count them.
	total, last := j.downloadTotal(j.announce(ctx))
	bar := j.bar("download", total, progress.Options{NoDocs: true}) // a download has no documents
	// The callback runs on every downloading goroutine at once: last, the bytes of
	// each file counted so far, needs the lock.
	var mu sync.Mutex
	err := fetch.Fetch(ctx, j.fetches, fetch.Options{
		Parallel: j.flags.downloads, Logger: j.log, Validate: prep.CheckDownload, Hint: j.fetchHint,
		Progress: func(dest string, done, _ int64) {
			mu.Lock()
			delta := done - last[dest]
			if delta < 0 { // started over from byte 0 (the server ignored the Range)
				delta = done
			}
			last[dest] = done
			mu.Unlock()
			bar.Add(delta, 0)
		},
	})
	if err != nil {
		bar.Stop()
		return err
	}
	bar.Done()
	return nil
}

// hasDownloads reports whether a file of the job is still to be downloaded.
func (j *job) hasDownloads() bool {
	for _, f := range j.fetches {
		if _, err := os.Stat(f.Dest); err != nil {
			return true
		}
	}
	return false
}

// fetchHint is the next step after a failed download: prep.FetchHint's, which names
// --mirror and --checksums, but for prep custom, which has neither.
func (j *job) fetchHint(f fetch.File, err error) string {
	if j.sub != "custom" {
		return prep.FetchHint(f, err)
	}
	if errors.Is(err, fetch.ErrMismatch) {
		return fmt.Sprintf("check the URL given to --input, or put the file you want at %s by hand", f.Dest)
	}
	return fmt.Sprintf("rerun to resume, check the URL given to --input, or download the file yourself and pass it as --input (or put it at %s)", f.Dest)
}

// bar starts a progress report per --progress, with opt's other options.
func (j *job) bar(label string, total int64, opt progress.Options) *progress.Bar {
	if j.flags.progress == "off" {
		return nil
	}
	opt.Quiet = j.flags.progress == "auto"
	return progress.NewWithOptions(j.stderr, j.log, label, total, opt)
}

// report is prep-report.json: per split, the documents kept and the records dropped,
// with the first examples of each kind of bad record.
type report struct {
	Splits []splitReport `json:"splits"`
}

type splitReport struct {
	Split       string               `json:"split"`
	Documents   int64                `json:"documents"`
	Bad         int64                `json:"bad"`
	InvalidUTF8 int64                `json:"invalid_utf8"`
	Filtered    int64                `json:"filtered"`
	Empty       int64                `json:"empty"`
	Truncated   int64                `json:"truncated"`
	UnreadBytes *int64               `json:"unread_bytes,omitempty"` // nil: not known (a finished part's)
	BadRecords  prep.BadRecordReport `json:"bad_records"`
}

// writeReport writes the bad records (counts and first examples per split) next to the
// dataset's local directory, DIR/NAME/prep-report.json.
func (j *job) writeReport(name string, stats pipelines.RunStats) (string, error) {
	file := filepath.Join(j.workDir(), name)
	r := report{Splits: []splitReport{}}
	for _, s := range stats.Splits {
		sr := splitReport{Split: s.Split, Documents: s.Docs, Bad: s.Bad, InvalidUTF8: s.InvalidUTF8, Filtered: s.Filtered, Empty: s.Empty,
			Truncated: s.Truncated}
		if !s.UnreadUnknown {
			sr.UnreadBytes = &s.UnreadBytes
		}
		if s.BadRecords != nil {
			sr.BadRecords = *s.BadRecords
		}
		r.Splits = append(r.Splits, sr)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(j.workDir(), 0o777); err != nil {
		return "", err
	}
	return file, os.WriteFile(file, append(data, '\n'), 0o666)
}

var errNoCorpus = errors.New("no such corpus")
