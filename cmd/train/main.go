// Command train trains GPT models on gptkit datasets, on the CPU or NVIDIA GPUs
// (--device; cuda-sim: the PTX simulator):
//
//	train --data DATA [--config FILE] [--out DIR] [flags]   train (see configs/ and train -h)
//	train ... --nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P] [--max-restarts K]
//	                                                        data-parallel: launch N ranks on this node
//	train ... --hostfile FILE                               a launcher on every host of FILE, over ssh
//	srun -n W train ...                                     data-parallel under SLURM (one task per rank)
//	train sample --ckpt DIR --prompt TEXT [--max-new-tokens N --temperature T --top-k K --seed S]
//	train score --ckpt DIR --tokens FILE                    mean next-token loss, {"loss": X}
//	train export --ckpt DIR --format hf --out DIR2          a Hugging Face GPT-2 directory
//	train plot --out DIR                                    DIR/loss.png from DIR/metrics.jsonl
//	train samples --data DATA --seq-len L --num-samples N   the training samples, in order
//
// DATA may be a local dataset directory, s3://bucket/prefix, a bare GPT-NeoX prefix or a
// blend (see train samples -h). stdout carries only the command's output; logs, progress
// and errors go to stderr. Exit status: 0 on success, 1 on a failure (one line on
// stderr), 2 on a usage error.
package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"gptkit/internal/cli"
)

func main() { cli.Main(run) }

// run runs the train command line args (without the program name) and returns the exit
// status. stdin is read by score --tokens -.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return cli.ExitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "samples":
		return runSamples(ctx, rest, stdout, stderr)
	case "sample":
		return runSample(ctx, rest, stdout, stderr)
	case "score":
		return runScore(ctx, rest, stdin, stdout, stderr)
	case "export":
		return runExport(ctx, rest, stdout, stderr)
	case "plot":
		return runPlot(ctx, rest, stdout, stderr)
	case "help":
		printUsage(stderr)
		return cli.ExitOK
	default:
		if strings.HasPrefix(cmd, "-") {
			return runTraining(ctx, args, stdin, stdout, stderr)
		}
		fmt.Fprintf(stderr, "train: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return cli.ExitUsage
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: train --data DATA [--config FILE] [--out DIR] [flags]
       train COMMAND [flags]

Trains GPT models on gptkit datasets (nanoGPT's GPT-2 and recipe), on the CPU or on
NVIDIA GPUs (--device auto|cpu|cuda|cuda-sim; bfloat16 mixed precision on GPUs).
With flags and no command it trains (train -h lists the flags); with --nproc-per-node N
(and --nnodes, --node-rank, --master-addr, --master-port) or --hostfile FILE it trains
data-parallel, and so it does when started by srun or torchrun.

Commands:
  sample    generate text from a checkpoint
  score     the mean next-token loss of a checkpoint on token sequences
  export    write a checkpoint as a Hugging Face GPT-2 directory
  plot      draw a run's loss curve (OUT/loss.png from OUT/metrics.jsonl)
  samples   print the training samples in order (GPT-NeoX order), or those one rank receives

Run 'train COMMAND -h' for a command's flags.
`)
}
