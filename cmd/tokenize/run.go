package main

import (
	"context"
	"errors"
	"fmt"
	"gptkit/internal/cli"
	"io"
	"log/slog"
	"os"
	"strings"

	"runtime"

	progressbar "gptkit/internal/progress"
	"gptkit/pipelines"
	"gptkit/shards"
)

// runRun implements `tokenize run`: documents from files -> a shards dataset.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("tokenize", "run", "--input FILE... --output DIR --name NAME --tokenizer SPEC [flags]",
		"Tokenizes JSONL (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz), text (.txt, .txt.zst, .txt.gz: one\n"+
			"document each), .zip (one document per member) and .parquet files in parallel,\n"+
			"in input order, into GPT-NeoX indexed datasets DIR/NAME_text_document.{bin,idx} (more shards\n"+
			"with --shard-size) and DIR/manifest.json, written last. DIR may be s3://bucket/prefix.\n"+
			"A failed or interrupted run leaves no manifest: readers see nothing until a run completes.\n"+
			specialsNote+"\nSo a document holding the text <|endoftext|> has an end-of-document id inside it.\n\n"+
			"Partitioned (array jobs): with --num-workers W the run is cut into W parts and this process\n"+
			"does part --worker-index I (by default the array job's task: SLURM_ARRAY_TASK_ID, a Kubernetes\n"+
			"Indexed Job's JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX; W defaults to\n"+
			"SLURM_ARRAY_TASK_COUNT of a whole array 0..W-1, or AWS_BATCH_JOB_ARRAY_SIZE). Each part reads an equal share of\n"+
			"the input bytes (line-aligned byte ranges of .jsonl files; a .jsonl.zst/.gz file worth\n"+
			"k >= 2 shares is shared by k parts, each decompressing all of it and tokenizing every\n"+
			"k-th 64 MiB stripe; other files whole) into DIR/parts/part-IIIII-of-WWWWW/; a killed\n"+
			"part resumes when rerun, a finished one is skipped.\n"+
			"Once all are done, `shards merge-parts DIR` writes DIR/manifest.json: the same documents,\n"+
			"in the same order, as one process would have written, whatever W.\n\n"+
			"Several .jsonl.zst/.gz files are read one at a time (a compressed stream has one reader,\n"+
			"which feeds ~5 workers): with --parts K this process runs K parts of such a partitioned run\n"+
			"at once, each with its share of --workers, and merges them when all are done.")
	inputs := cli.ListFlag{Comma: true}
	c.Flags.Var(&inputs, "input", "input `FILES`, comma-separated or following the flag (required; may be repeated)")
	output := c.Flags.String("output", "", "dataset `DIR`: a directory or s3://bucket/prefix (required)")
	name := c.Flags.String("name", "", "dataset `NAME`: shards are NAME_text_document* (required)")
	var tf tokenizerFlags
	tf.Register(c.Flags, "the tokenizer (required)")
	workers := c.Flags.Int("workers", runtime.GOMAXPROCS(0), "encode on `N` cores")
	textKey := c.Flags.String("text-key", "text", "the JSONL `FIELD` holding the text")
	appendEOD := c.Flags.Bool("append-eod", true, "append the tokenizer's end-of-document id after every document")
	shardSize := c.Flags.String("shard-size", "0", "start a new shard when a .bin reaches `SIZE` bytes (e.g. 4GiB, 500MB; 0: one shard)")
	overwrite := c.Flags.Bool("overwrite", false, "replace the dataset already in DIR")
	acceptTrunc := c.Flags.Bool("accept-truncated", false, "keep what precedes the damage of a truncated or corrupt compressed file (skipping the rest; the summary says how many bytes were not read) instead of failing")
	var s3 cli.S3Flags
	s3.Register(c.Flags)
	numWorkers := c.Flags.Int("num-workers", -1, "cut the run into `W` parts, of which this process does one (-1: from the array-job environment, else not partitioned; 0: not partitioned, whatever the environment)")
	workerIndex := c.Flags.Int("worker-index", -1, "with --num-workers: the part `I` (from 0) this process does (-1: from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX)")
	parts := c.Flags.Int("parts", 1, "run `K` parts of a partitioned run at once in this process, each with its share of --workers, and merge them: several compressed inputs are read K at a time (1: one run)")
	var progress progressFlag
	progress.register(c.Flags)
	if code, ok := c.Parse(cli.ExpandListArgs(args, "input"), stderr); !ok {
		return code
	}
	switch {
	case len(inputs.Values) == 0:
		return c.UsageError(stderr, "--input is required")
	case *output == "":
		return c.UsageError(stderr, "--output is required")
	case *name == "" || strings.ContainsAny(*name, "/\\"):
		return c.UsageError(stderr, "--name is required and may not contain a slash")
	case tf.Spec == "":
		return c.UsageError(stderr, "--tokenizer is required")
	case *workers < 1:
		return c.UsageError(stderr, "--workers must be at least 1")
	case *parts < 1 || *parts > *workers:
		return c.UsageError(stderr, fmt.Sprintf("--parts is %d, want 1 to --workers (%d)", *parts, *workers))
	case progress.check() != "":
		return c.UsageError(stderr, progress.check())
	}
	shardBytes, err := cli.ParseSize(*shardSize)
	if err != nil {
		return c.UsageError(stderr, "--shard-size: "+err.Error())
	}
	if *textKey == "" {
		return c.UsageError(stderr, "--text-key is empty")
	}
	task, partitioned, err := pipelines.ResolveArrayTask(*numWorkers, *workerIndex, os.Getenv)
	if err != nil {
		return c.UsageError(stderr, err.Error())
	}
	if partitioned && *parts > 1 {
		return c.UsageError(stderr, "--parts runs a partitioned run in this process: not with --num-workers or an array job's task (--num-workers 0 turns that off)")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cli.WarnRepeatedInputs(log, inputs.Values)
	tok, err := tf.load(ctx, stderr)
	if err != nil {
		return fail(stderr, "run", err)
	}
	// So does a tokenizer without the end-of-document id --append-eod asks for.
	if *appendEOD && tok.EOD() < 0 {
		return fail(stderr, "run", fmt.Errorf("tokenizer %s has no end-of-document token; pass --append-eod=false", tok.Name()))
	}
	// A local input that is not there fails before the output directory is made (it
	// was left behind, empty).
	for _, in := range inputs.Values {
		if !strings.Contains(in, "://") {
			if _, err := os.Stat(in); err != nil {
				return fail(stderr, "run", fmt.Errorf("--input %s: %w", in, errors.Unwrap(err)))
			}
		}
	}
	st, err := s3.Open(ctx, *output, log)
	if err != nil {
		return fail(stderr, "run", fmt.Errorf("--output %s: %w", *output, err))
	}
	// The tokenizer files to store beside the data (after the run, below), planned
	// before its work with the previous manifest its check reads: a file of the user's
	// in their place is refused before the work, and the manifest lists them.
	var besidePlan *cli.TokenizerPlan
	planBeside := func(prev *shards.Manifest) ([]string, error) {
		p, err := cli.PlanTokenizerBeside(ctx, st, tf.Spec, tok, prev, log)
		if err != nil {
			return nil, err
		}
		besidePlan = p
		return p.Keys(), nil
	}
	job := &pipelines.TokenizeRun{
		Inputs: inputs.Values, Store: st, Name: *name, Tokenizer: tok, TokSpec: tf.Spec, PlanTokenizerFiles: planBeside,
		TextKey: *textKey, AppendEOD: *appendEOD, Workers: *workers, ShardBytes: shardBytes,
		Overwrite: *overwrite, Command: "tokenize run " + strings.Join(args, " "), Logger: log,
		AcceptTruncated: *acceptTrunc, Resume: true,
	}
	switch {
	case partitioned:
		job.NumWorkers, job.WorkerIndex = task.Count, task.Index
		log.Info("partitioned run", "part", task.Index, "of", task.Count, "index_from", task.IndexFrom, "count_from", task.CountFrom)
	case *parts > 1:
		job.LocalParts = *parts
	default:
		if k := pipelines.SuggestLocalParts(inputs.Values, *workers); k > 1 {
			log.Info("several compressed inputs are read one at a time, which keeps about 5 workers busy", "workers", *workers, "hint", fmt.Sprintf("--parts %d reads %d at once", k, k))
		}
	}
	_, total, err := job.Slice()
	if err != nil {
		return fail(stderr, "run", err)
	}
	var bar *progressbar.Bar
	if progress.mode != "off" {
		bar = progressbar.NewWithOptions(stderr, log, "run", total, progressbar.Options{Quiet: progress.mode == "auto"})
	}
	addProgress := func(bytes, docs int64) {
		if bar != nil {
			bar.Add(bytes, docs)
		}
	}
	job.Progress = addProgress
	job.ProgressTokens = bar.AddTokens
	job.ProgressSkipped = bar.AddSkipped // a resumed run's kept documents: not in the MB/s or ETA
	m, stats, err := job.Run(ctx)
	if bar != nil {
		if err != nil {
			bar.Stop()
		} else {
			bar.Done()
		}
	}
	if err != nil {
		return fail(stderr, "run", cli.InterruptedResumable(ctx, err))
	}
	// A tokenizer of local files (a chars.json, tokenize train's tokenizer.json) has no
	// name that shards cat --decode, train sample or export could load it by: its
	// files are stored beside the data, as prep stores them (after the run, which
	// refuses a directory of another job's dataset).
	if besidePlan == nil { // (every run that succeeds plans them: this is not reached)
		if _, err := planBeside(cli.PreviousManifest(ctx, st)); err != nil {
			return fail(stderr, "run", err)
		}
	}
	if _, err := besidePlan.Store(ctx); err != nil {
		return fail(stderr, "run", err)
	}
	if stats.Truncated > 0 { // (the summary says it too, unless --progress off)
		if stats.UnreadUnknown { // (a finished dataset's: its manifest does not keep them)
			log.Warn("damaged compressed inputs kept up to the damage (--accept-truncated)", "streams", stats.Truncated)
		} else {
			log.Warn("damaged compressed inputs kept up to the damage (--accept-truncated)", "streams", stats.Truncated, "unread_bytes", stats.UnreadBytes)
		}
	}
	where := strings.TrimSuffix(*output, "/")
	if partitioned && !stats.AlreadyMerged {
		where += "/" + stats.PartDir
		fmt.Fprintf(stderr, "part %d of %d done; once every part is: shards merge-parts %s\n", task.Index, task.Count, strings.TrimSuffix(*output, "/"))
	}
	if progress.mode != "off" {
		io.WriteString(stderr, stats.Summary(where, ""))
	}
	fmt.Fprintf(stdout, "%s: %d documents, %d tokens, %d shards\n", where+"/manifest.json", m.Documents, m.Tokens, len(m.Shards))
	return exitOK
}
