package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gptkit/internal/cli"
	"gptkit/internal/durable"
	"gptkit/train/plot"
)

// runPlot implements `train plot`.
func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "plot", "--out DIR",
		"Draws DIR/loss.png from DIR/metrics.jsonl (a run's output directory): the training loss\n"+
			"per step and the validation loss on eval steps. A step logged twice (a resumed run) is\n"+
			"drawn with its last line's values. The PNG is written atomically; stdout gets its path.")
	out := c.Flags.String("out", "", "the run's output `DIR`, holding metrics.jsonl (required)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	if *out == "" {
		return c.UsageError(stderr, "--out DIR is required (the run's output directory)")
	}
	fail := func(err error) int { return cli.Fail(stderr, "train plot", cli.Interrupted(ctx, err)) }
	if strings.Contains(*out, "://") {
		return fail(fmt.Errorf("--out %s: plot reads a local run directory (copy metrics.jsonl down first)", *out))
	}
	metricsPath := filepath.Join(*out, "metrics.jsonl")
	f, err := os.Open(metricsPath)
	if err != nil {
		return fail(fmt.Errorf("%w (is %s a run's output directory?)", err, *out))
	}
	defer f.Close()
	var png bytes.Buffer
	if err := plot.LossPNG(&png, f); err != nil {
		var le *plot.LineError
		if errors.As(err, &le) {
			return fail(fmt.Errorf("%s line %d: %v", metricsPath, le.Line, le.Err))
		}
		return fail(fmt.Errorf("%s: %w", metricsPath, err))
	}
	dst := filepath.Join(*out, "loss.png")
	if err := durable.WriteFile(dst, png.Bytes(), 0o644); err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, dst)
	return cli.ExitOK
}
