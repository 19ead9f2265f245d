// Command tokenize turns text into token ids and back, and trains tokenizers.
//
//	tokenize encode --tokenizer SPEC [--jsonl] [--text-key text] [--workers N] < in > ids.jsonl
//	tokenize decode --tokenizer SPEC < ids.jsonl > texts.jsonl
//	tokenize train ...
//
// SPEC is a tokenizer.json, a directory holding one (or vocab.json + merges.txt, or a
// chars.json), a .tiktoken file, or a name: gpt2, r50k_base, neox-20b, cl100k_base,
// o200k_base, char (see package gptkit/tokenize/spec). stdout carries only the ids or
// texts; logs and errors go to stderr. Exit status: 0 on success, 1 on a failure
// (one line on stderr), 2 on a usage error.
package main

import (
	"context"
	"fmt"
	"io"

	"gptkit/internal/cli"
)

// Exit statuses.
const (
	exitOK      = cli.ExitOK
	exitFailure = cli.ExitFailure
	exitUsage   = cli.ExitUsage
)

func main() { cli.Main(run) }

// run runs the tokenize command line args (without the program name) and returns
// the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "encode":
		return runEncode(ctx, rest, stdin, stdout, stderr)
	case "decode":
		return runDecode(ctx, rest, stdin, stdout, stderr)
	case "train":
		return runTrain(ctx, rest, stdout, stderr)
	case "run":
		return runRun(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		printUsage(stderr)
		return exitOK
	default:
		fmt.Fprintf(stderr, "tokenize: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return exitUsage
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: tokenize COMMAND [flags]

Turns text into token ids and back, and trains tokenizers.

Commands:
  encode   text on stdin -> one JSON array of token ids per line (or for the whole input)
  decode   one JSON array of token ids per line on stdin -> one JSON string per line
  train    train a byte-level BPE tokenizer and write its tokenizer.json
  run      tokenize JSONL/text files into a shards dataset (GPT-NeoX .bin/.idx + manifest.json)

Run 'tokenize COMMAND -h' for a command's flags.
`)
}

// fail prints err as the one line a failed command leaves on stderr and returns
// exitFailure.
func fail(stderr io.Writer, cmd string, err error) int {
	return cli.Fail(stderr, "tokenize "+cmd, err)
}

// interrupted replaces err with a plain "interrupted" once ctx is canceled (SIGINT or
// SIGTERM), whatever the step that noticed.
func interrupted(ctx context.Context, err error) error {
	return cli.Interrupted(ctx, err)
}
