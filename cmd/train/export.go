package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"gptkit/internal/cli"
	"gptkit/train"
	"gptkit/train/hfgpt2"
)

// runExport implements `train export`.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "export", "--ckpt DIR --format hf --out DIR2",
		"Writes the model of a checkpoint as a Hugging Face GPT2LMHeadModel directory: DIR2/"+hfgpt2.WeightsName+"\n"+
			"and DIR2/"+hfgpt2.ConfigName+" (transformers' GPT2LMHeadModel.from_pretrained(DIR2) loads it; the\n"+
			"padded vocabulary rows are dropped; a bias-free model gets zero biases). train --init-from\n"+
			"DIR2 starts a run from such a directory. DIR is a checkpoint directory or a run directory\n"+
			"(its newest checkpoint). stdout gets DIR2.")
	ckpt := c.Flags.String("ckpt", "", "the checkpoint or run `DIR` (required)")
	format := c.Flags.String("format", "hf", "the `FORMAT`: hf (Hugging Face GPT-2)")
	out := c.Flags.String("out", "", "the output `DIR2` (created if missing; its files are replaced) (required)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	switch {
	case *ckpt == "":
		return c.UsageError(stderr, "--ckpt DIR is required")
	case *out == "":
		return c.UsageError(stderr, "--out DIR2 is required")
	case *format != "hf":
		return c.UsageError(stderr, fmt.Sprintf("--format %q: want hf", *format))
	}
	fail := func(err error) int { return cli.Fail(stderr, "train export", cli.Interrupted(ctx, err)) }
	be, err := openBackend("ref", 1, slog.New(slog.DiscardHandler)) // only holds the weights
	if err != nil {
		return fail(err)
	}
	m, st, err := train.LoadCheckpoint(ctx, *ckpt, be)
	if err != nil {
		return fail(err)
	}
	if err := train.ExportHF(*out, m, st); err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, *out)
	return cli.ExitOK
}
