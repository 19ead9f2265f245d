// Command train trains GPT models on gptkit datasets. For now it has one subcommand,
// which prints the training samples a run would see:
//
//	train samples --data DIR --seq-len L --seed S --num-samples N [--order default|neox]
//	    [--split 969,30,1] [--first K] [--count C] [--rank R --world W --micro-batch M --grad-accum G]
//
// DIR may be a local dataset directory or s3://bucket/prefix (--s3-endpoint,
// --s3-path-style). stdout carries only the command's output; logs and errors go to
// stderr. Exit status: 0 on success, 1 on a failure (one line on stderr), 2 on a usage
// error.
package main

import (
	"context"
	"fmt"
	"io"

	"gptkit/internal/cli"
)

func main() { cli.Main(run) }

// run runs the train command line args (without the program name) and returns the exit
// status. stdin is unused today; it is there so that every command's run has one shape.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return cli.ExitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "samples":
		return runSamples(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		printUsage(stderr)
		return cli.ExitOK
	default:
		fmt.Fprintf(stderr, "train: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return cli.ExitUsage
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: train COMMAND [flags]

Trains GPT models on gptkit datasets (the trainer itself is not there yet).

Commands:
  samples   print the training samples in order (GPT-NeoX order), or those one rank receives

Run 'train COMMAND -h' for a command's flags.
`)
}
