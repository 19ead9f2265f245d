package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"

	"gptkit/internal/cli"
	"gptkit/storage"
	"gptkit/train"
)

// runScore implements `train score`.
func runScore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "score", "--ckpt DIR --tokens FILE",
		"Prints {\"loss\": X} on stdout: the mean cross-entropy (nats) of the model of a checkpoint\n"+
			"over every next-token prediction in FILE, a JSON array of token-id arrays ([[1,2,3],[4,5]]:\n"+
			"each array is one sequence, scored from its second token on, given the tokens before it;\n"+
			"at most block_size+1 tokens each). FILE - reads stdin. DIR is a checkpoint directory or a\n"+
			"run directory (its newest checkpoint).")
	ckpt := c.Flags.String("ckpt", "", "the checkpoint or run `DIR` (required)")
	var s3 cli.S3Flags // an s3:// --ckpt
	s3.Register(c.Flags)
	tokens := c.Flags.String("tokens", "", "the JSON `FILE` of token-id arrays (- for stdin) (required)")
	device := c.Flags.String("device", "auto", "the `DEVICE`: auto, cpu, ref, cuda or cuda-sim")
	threads := c.Flags.Int("threads", 0, "CPU threads `N` (0: one per CPU)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	switch {
	case *ckpt == "":
		return c.UsageError(stderr, "--ckpt DIR is required")
	case *tokens == "":
		return c.UsageError(stderr, "--tokens FILE is required")
	case *threads < 0: // as train refuses it (a negative count ran as one thread per CPU)
		return c.UsageError(stderr, fmt.Sprintf("--threads %d: want >= 0 (0: one per CPU)", *threads))
	case !slices.Contains([]string{"auto", "cpu", "ref", "cuda", "cuda-sim"}, *device): // before the tokens are read
		return c.UsageError(stderr, (&deviceNameError{*device}).Error())
	}
	fail := func(err error) int { return cli.Fail(stderr, "train score", cli.Interrupted(ctx, err)) }
	// The tokens first: a wrong --tokens fails before a device is probed (and logged).
	var data []byte
	var err error
	if *tokens == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*tokens)
	}
	if err != nil {
		return fail(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(fmt.Errorf("%s is empty: want a JSON array of token-id arrays ([[1,2,3],[4,5]])", *tokens))
	}
	seqs, err := parseTokenArrays(data)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *tokens, err))
	}
	be, err := openBackend(*device, *threads, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return backendFailed(ctx, c, stderr, err)
	}
	var m *train.Model
	err = onDevice(func() (err error) {
		m, _, err = train.LoadCheckpointFrom(ctx, *ckpt, be, storage.Options{S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle})
		return err
	})
	if err != nil {
		return fail(err)
	}
	if err := modelFitsDevice(be, m.Config); err != nil {
		return fail(err)
	}
	var loss float64
	var scoreErr error // the tokens' (a token past the vocabulary, a sequence too long)
	if err := onDevice(func() error {
		loss, _, scoreErr = train.Score(m, seqs)
		return nil
	}); err != nil {
		return fail(err) // the device's
	}
	if scoreErr != nil {
		return fail(fmt.Errorf("%s: %w", *tokens, scoreErr))
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return fail(fmt.Errorf("the loss is %g", loss))
	}
	fmt.Fprintf(stdout, "{\"loss\": %s}\n", strconv.FormatFloat(loss, 'g', -1, 64))
	return cli.ExitOK
}

// jsonErrorAt is "line L, byte B: " for a JSON syntax or type error at byte B of data
// (B counted from 0, as the shards tools count), "" for other errors.
func jsonErrorAt(data []byte, err error) string {
	var off int64 = -1
	// (Offset counts the bytes read, the bad one included.)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		off = max(se.Offset-1, 0)
	} else if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		off = max(te.Offset-1, 0)
	}
	if off < 0 || off > int64(len(data)) {
		return ""
	}
	return fmt.Sprintf("line %d, byte %d: ", 1+bytes.Count(data[:off], []byte("\n")), off)
}

// parseTokenArrays reads a JSON array of arrays of token ids.
func parseTokenArrays(data []byte) ([][]int32, error) {
	var raw [][]json.Number
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%swant a JSON array of token-id arrays ([[1,2,3],[4,5]]): %w", jsonErrorAt(data, err), err)
	}
	// Decoder.More is false before a stray ']' or '}': check the rest byte by byte.
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("want one JSON array of token-id arrays; %q follows it at byte %d", rest[:min(len(rest), 16)], len(data)-len(rest))
	}
	out := make([][]int32, len(raw))
	for i, seq := range raw {
		out[i] = make([]int32, len(seq))
		for k, n := range seq {
			v, err := strconv.ParseInt(n.String(), 10, 32)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("sequence %d, token %d: %s is not a token id", i, k, n)
			}
			out[i][k] = int32(v)
		}
	}
	return out, nil
}
