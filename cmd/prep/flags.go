package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"gptkit/internal/cli"
	"gptkit/pipelines"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// jobFlags are the flags `prep NAME` and `prep custom` share.
type jobFlags struct {
	dir           string
	dest          string
	tok           cli.TokenizerFlags
	workers       int
	downloads     int
	keepDownloads bool
	textKey       string
	shardSize     string
	filterSet     string
	onError       string
	maxErrorRate  float64
	acceptTrunc   bool
	overwrite     bool
	s3            cli.S3Flags
	progress      string

	// Partitioned runs (array jobs).
	numWorkers  int
	workerIndex int
	mergeParts  bool
	slurm       bool
	arraySize   int
	sbatchArgs  string
	dryRun      bool
	task        pipelines.ArrayTask // resolved by check
	partitioned bool
	localParts  int // --parts: parts run at once in this process
}

func (f *jobFlags) register(c *cli.Command) {
	fs := c.Flags
	fs.StringVar(&f.dir, "d", "", "data `DIR`: the dataset goes to DIR/NAME/, downloads to DIR/NAME/downloads/ (required)")
	fs.StringVar(&f.dest, "dest", "", "write the dataset to `LOCATION`/NAME instead (a directory or s3://bucket/prefix); downloads stay in DIR")
	f.tok.Register(fs, "the tokenizer (default: the corpus' own, gpt2 for most; shakespeare: char, nanoGPT's character vocabulary)")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "tokenize on `N` cores")
	fs.IntVar(&f.downloads, "parallel-downloads", 4, "download `N` files at once")
	fs.BoolVar(&f.keepDownloads, "keep-downloads", false, "keep DIR/NAME/downloads/ after the dataset is complete")
	fs.StringVar(&f.textKey, "text-key", "text", "the JSONL member (or Parquet column) `FIELD` holding the text")
	fs.StringVar(&f.shardSize, "shard-size", "0", "start a new shard when a .bin reaches `SIZE` bytes (e.g. 4GiB; 0: one shard per split); a killed run resumes from its last finished shard")
	fs.StringVar(&f.filterSet, "filter-set", "", "keep only the Pile records whose meta.pile_set_name is `NAME` (e.g. \"Enron Emails\")")
	fs.StringVar(&f.onError, "on-error", "skip", "`POLICY` for bad records (malformed JSON, a text that is not a string): skip them (counted, reported in DIR/NAME/prep-report.json) or fail")
	fs.BoolVar(&f.acceptTrunc, "accept-truncated", false, "keep what precedes the damage of a truncated or corrupt compressed file (skipping the rest, reported in DIR/NAME/prep-report.json with the bytes not read) instead of failing")
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0.01, "exit 1 (after writing the dataset) when more than this `FRACTION` of the records were bad (checked again by a rerun of a finished job, and by --merge-parts)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace a finished dataset in the output directory")
	f.s3.Register(fs)
	fs.StringVar(&f.progress, "progress", "auto", "`MODE`: auto (a live line on a terminal, log lines otherwise), on, off")
	fs.IntVar(&f.numWorkers, "num-workers", -1, "tokenize only part --worker-index of `W` parts, into OUT/parts/ (an array job's task; -1: from the array-job environment, else not partitioned; 0: not partitioned, whatever the environment); with --merge-parts, the parts to merge")
	fs.IntVar(&f.workerIndex, "worker-index", -1, "with --num-workers: the part `I` (from 0) to do (-1: from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX)")
	fs.BoolVar(&f.mergeParts, "merge-parts", false, "do not tokenize: write OUT/manifest.json from the finished parts of a partitioned run (refusing, naming them, while parts are missing), then remove the downloads unless --keep-downloads")
	fs.BoolVar(&f.slurm, "slurm", false, "do not tokenize here: download the corpus, write a SLURM array job of --array-size tasks (one part each) and a merge job that runs after it into DIR/NAME/slurm/, submit both with sbatch, and print their ids")
	fs.IntVar(&f.arraySize, "array-size", 16, "with --slurm: the number of array tasks `W` (parts)")
	fs.StringVar(&f.sbatchArgs, "sbatch-args", "", "with --slurm: more sbatch `OPTIONS` for both jobs, split as a shell splits them (e.g. \"--partition=cpu --time=4:00:00 --comment='tokenize c4'\"), written into the scripts as #SBATCH lines")
	fs.BoolVar(&f.dryRun, "dry-run", false, "with --slurm: print the scripts and the sbatch commands instead of writing and submitting them")
	fs.IntVar(&f.localParts, "parts", 1, "tokenize as `K` parts of a partitioned run at once in this process, each with its share of --workers, merged at the end: several compressed files are read K at a time instead of one (1: one run)")
}

// check returns a usage error message, or "".
func (f *jobFlags) check() string {
	switch {
	case f.dir == "":
		return "-d DIR is required"
	case f.workers < 1:
		return "--workers must be at least 1"
	case f.downloads < 1:
		return "--parallel-downloads must be at least 1"
	case f.onError != "skip" && f.onError != "fail":
		return fmt.Sprintf("--on-error is %q, want skip or fail", f.onError)
	case f.maxErrorRate < 0 || f.maxErrorRate > 1:
		return "--max-error-rate must be between 0 and 1"
	case f.progress != "auto" && f.progress != "on" && f.progress != "off":
		return fmt.Sprintf("--progress is %q, want auto, on or off", f.progress)
	}
	if _, err := cli.ParseSize(f.shardSize); err != nil {
		return "--shard-size: " + err.Error()
	}
	// "s3://" alone once became the local directory s3:/NAME (the slashes trimmed
	// before NAME was added): the dataset written beside the downloads, not to S3.
	if _, rest, ok := strings.Cut(f.dest, "://"); ok && strings.Trim(rest, "/") == "" {
		return fmt.Sprintf("--dest %s names no bucket or directory: want s3://BUCKET/PREFIX or a directory path", f.dest)
	}
	switch {
	case f.slurm && f.mergeParts:
		return "--slurm submits the merge itself: drop --merge-parts"
	case f.slurm && (f.numWorkers >= 0 || f.workerIndex >= 0):
		return "--slurm sets the parts itself: use --array-size W, not --num-workers or --worker-index"
	case f.slurm && f.arraySize < 1:
		return "--array-size must be at least 1"
	case f.slurm && reservedSbatchOption(f.sbatchArgs) != "":
		return reservedSbatchOption(f.sbatchArgs)
	case f.dryRun && !f.slurm:
		return "--dry-run goes with --slurm"
	case f.localParts < 1 || f.localParts > f.workers:
		return fmt.Sprintf("--parts is %d, want 1 to --workers (%d)", f.localParts, f.workers)
	case f.localParts > 1 && (f.slurm || f.mergeParts || f.numWorkers > 0 || f.workerIndex >= 0):
		return "--parts runs a partitioned run in this process: not with --slurm, --merge-parts, --num-workers or --worker-index"
	case f.mergeParts && f.workerIndex >= 0:
		return "--merge-parts merges every part: drop --worker-index"
	case f.mergeParts && f.numWorkers < 0:
		f.numWorkers = 0 // from the parts found
	}
	if f.slurm || f.mergeParts {
		return ""
	}
	task, ok, err := pipelines.ResolveArrayTask(f.numWorkers, f.workerIndex, os.Getenv)
	if err != nil {
		return err.Error()
	}
	f.task, f.partitioned = task, ok
	if ok && f.localParts > 1 {
		return "--parts runs a partitioned run in this process: not in an array job's task"
	}
	return ""
}

// loadTokenizer resolves --tokenizer, else def: the built-in of that name (the
// catalog's default), never a file or directory of that name in the working directory
// (a dataset directory ./gpt2). Downloads are logged.
func (f *jobFlags) loadTokenizer(ctx context.Context, def string, log *slog.Logger) (*tokenize.Tokenizer, string, error) {
	if f.tok.Spec == "" && def != "" {
		tok, err := spec.LoadName(ctx, def, f.tok.Options(log))
		return tok, def, err
	}
	tok, err := f.tok.Load(ctx, "", log)
	return tok, f.tok.Spec, err
}
