// Command shards inspects, checks, merges and converts token datasets: GPT-NeoX indexed
// shards (NAME_text_document.{bin,idx}) grouped by a manifest.json (package gptkit/shards).
//
//	shards info DIR [--json]
//	shards verify DIR|PREFIX [--allow-merged-doc-idx]
//	shards cat DIR|PREFIX --doc K [--decode [--tokenizer SPEC]]
//	shards merge OUT IN...
//	shards merge-parts DIR
//	shards convert --to nanogpt|llmc DIR --out PATH [--name NAME --split train|val ...]
//	shards convert --from nanogpt|llmc FILE... --out DIR --tokenizer SPEC [--split-at-eod]
//
// DIR may be a local directory or s3://bucket/prefix (--s3-endpoint, --s3-path-style); a
// PREFIX is a bare GPT-NeoX shard without a manifest. stdout carries only the command's
// output; logs and errors go to stderr. Exit status: 0 on success, 1 on a failure (one
// line on stderr; for verify, a damaged dataset), 2 on a usage error.
package main

import (
	"context"
	"fmt"
	"io"

	"gptkit/internal/cli"
)

func main() { cli.Main(run) }

// run runs the shards command line args (without the program name) and returns the exit
// status. stdin is unused today; it is there so that every command's run has one shape.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return cli.ExitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "info":
		return runInfo(ctx, rest, stdout, stderr)
	case "verify":
		return runVerify(ctx, rest, stdout, stderr)
	case "cat":
		return runCat(ctx, rest, stdout, stderr)
	case "merge":
		return runMerge(ctx, rest, stdout, stderr)
	case "merge-parts":
		return runMergeParts(ctx, rest, stdout, stderr)
	case "convert":
		return runConvert(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		printUsage(stderr)
		return cli.ExitOK
	default:
		fmt.Fprintf(stderr, "shards: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return cli.ExitUsage
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: shards COMMAND [flags]

Inspects, checks, merges and converts token datasets (GPT-NeoX .bin/.idx shards and
manifest.json). DIR may be a directory or s3://bucket/prefix.

Commands:
  info      summarize a dataset: tokenizer, dtype, documents, tokens, shards, provenance
  verify    check a dataset (checksums, structure, counts) or a bare GPT-NeoX shard
  cat       print one document as a JSON array of ids, or decoded as a JSON string
  merge     concatenate datasets into a new one with a single shard
  merge-parts  write the manifest of a partitioned run (array job) from its parts
  convert   export to nanoGPT or llm.c token files, or import them

Run 'shards COMMAND -h' for a command's flags.
`)
}

// fail prints err as the one line a failed command leaves on stderr (interrupted once
// ctx is canceled) and returns cli.ExitFailure.
func fail(ctx context.Context, stderr io.Writer, cmd string, err error) int {
	return cli.Fail(stderr, "shards "+cmd, cli.Interrupted(ctx, err))
}
