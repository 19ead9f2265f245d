// Command prep downloads corpora and tokenizes them into GPT-NeoX indexed datasets: what
// GPT-NeoX's prepare_data.py does, resumable, verified and parallel.
//
//	prep list
//	prep NAME -d DIR [--tokenizer SPEC] [--workers N] [--mirror BASE] [--checksums FILE] [--dest s3://...]
//	prep custom --input PATH_OR_URL... --name NAME -d DIR [...]
//	prep NAME -d DIR [...] --slurm [--array-size W] [--sbatch-args ARGS] [--dry-run]
//	prep NAME -d DIR [...] --num-workers W [--worker-index I]   (one task of an array job)
//	prep NAME -d DIR [...] --merge-parts
//
// Output: DIR/NAME/ (or DEST/NAME/ with --dest) with NAME_text_document*.{bin,idx} (val and
// test splits as NAME_val_text_document*, NAME_test_text_document*) and manifest.json,
// written last. Downloads go to DIR/NAME/downloads/, verified before anything is tokenized.
// stdout carries the summary line; logs, progress and the summary table go to stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"gptkit/internal/cli"
	"gptkit/prep"
)

func main() {
	cli.Main(func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return run(ctx, args, stdout, stderr)
	})
}

// run runs the prep command line args (without the program name) and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return cli.ExitUsage
	}
	switch name := args[0]; strings.ToLower(name) {
	case "list", "-list", "--list":
		c := cli.NewCommand("prep", "list", "", "Prints the catalog: every corpus prep NAME knows, its other names, files, sizes,\nsplits, tokenizer and sources.")
		if code, ok := c.Parse(args[1:], stderr); !ok {
			return code
		}
		if err := prep.PrintCatalog(stdout); err != nil {
			return cli.Fail(stderr, "prep list", err)
		}
		return cli.ExitOK
	case "-h", "-help", "--help", "help":
		printUsage(stderr)
		return cli.ExitOK
	case "custom":
		return runCustom(ctx, args[1:], stdout, stderr)
	default:
		if strings.HasPrefix(name, "-") {
			fmt.Fprintf(stderr, "prep: the corpus NAME comes first, then its flags\n\n")
			printUsage(stderr)
			return cli.ExitUsage
		}
		return runCorpus(ctx, name, args[1:], stdout, stderr)
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `usage: prep list
       prep NAME -d DIR [flags]          (NAME: %s)
       prep custom --input PATH_OR_URL... --name NAME -d DIR [flags]

Downloads a corpus (resumable, verified by size and sha256), then tokenizes it on every core
into DIR/NAME/: GPT-NeoX indexed datasets NAME_text_document*.{bin,idx} and manifest.json.
Killed at any moment, the same command continues where it stopped.

On a cluster: --slurm submits an array job (--array-size tasks, one part of the corpus each)
and a merge job; under Kubernetes Indexed Jobs or AWS Batch array jobs, run the same command
in every task with --num-workers W (the task's index comes from the environment), then once
with --merge-parts.

Run 'prep NAME -h' for the flags.
`, strings.Join(prep.CorpusNames(), ", "))
}
