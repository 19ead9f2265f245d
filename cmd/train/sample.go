package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/internal/cli"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
	"gptkit/train"
)

// runSample implements `train sample`: nanoGPT's sample.py.
func runSample(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "sample", "--ckpt DIR --prompt TEXT [--max-new-tokens N] [--temperature T] [--top-k K] [--seed S] [--tokenizer SPEC]",
		"Continues TEXT with the model of a checkpoint, as nanoGPT's sample.py: each new token is drawn\n"+
			"from the softmax of the last position's logits divided by --temperature, over the --top-k most\n"+
			"likely tokens, with the context cropped to block_size. It prints the prompt and its\n"+
			"continuation on stdout. DIR is a checkpoint directory or a run directory (its newest\n"+
			"checkpoint). The tokenizer is the training data's: the tokenizer files beside the dataset\n"+
			"(chars.json for prep shakespeare, tokenizer.json, vocab.json + merges.txt), else the\n"+
			"tokenizer the dataset's manifest names (gpt2, neox-20b, ...); --tokenizer SPEC overrides it.\n"+
			"Its fingerprint must match the one the model was trained with.")
	ckpt := c.Flags.String("ckpt", "", "the checkpoint or run `DIR` (required)")
	prompt := c.Flags.String("prompt", "", "the `TEXT` to continue (required; \"\" starts from the end-of-document token, if the tokenizer has one)")
	maxNew := c.Flags.Int("max-new-tokens", 500, "generate `N` tokens")
	temperature := c.Flags.Float64("temperature", 0.8, "divide the logits by `T` (0: greedy)")
	topK := c.Flags.Int("top-k", 200, "draw from the `K` most likely tokens (0: all)")
	seed := c.Flags.Uint64("seed", 1337, "the `SEED` of the draws")
	tokFlag := c.Flags.String("tokenizer", "", "tokenizer `SPEC` (a path or a name) instead of the dataset's")
	data := c.Flags.String("data", "", "the dataset `DIR` whose tokenizer to use, when it moved since training")
	device := c.Flags.String("device", "auto", "the `DEVICE`: auto, cpu or ref")
	threads := c.Flags.Int("threads", 0, "CPU threads `N` (0: one per CPU)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	switch {
	case *ckpt == "":
		return c.UsageError(stderr, "--ckpt DIR is required")
	case !isSet(c, "prompt"):
		return c.UsageError(stderr, "--prompt TEXT is required")
	case *maxNew < 0:
		return c.UsageError(stderr, "--max-new-tokens must be >= 0")
	case *temperature < 0:
		return c.UsageError(stderr, "--temperature must be >= 0")
	case *topK < 0:
		return c.UsageError(stderr, "--top-k must be >= 0")
	}
	be, err := openBackend(*device, *threads, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return c.UsageError(stderr, err.Error())
	}
	fail := func(err error) int { return cli.Fail(stderr, "train sample", cli.Interrupted(ctx, err)) }
	m, st, err := train.LoadCheckpoint(ctx, *ckpt, be)
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tok, err := checkpointTokenizer(ctx, st, *tokFlag, *data, log)
	if err != nil {
		return fail(err)
	}
	ids, err := tok.EncodeChecked(*prompt)
	if err != nil {
		return fail(fmt.Errorf("encode the prompt: %w", err))
	}
	if len(ids) == 0 {
		if tok.EOD() < 0 {
			return fail(fmt.Errorf("the prompt is empty and tokenizer %s has no end-of-document token to start from: give a --prompt", tok.Name()))
		}
		ids = []int{tok.EOD()}
	}
	prompt32 := make([]int32, len(ids))
	for i, id := range ids {
		prompt32[i] = int32(id)
	}
	out, err := train.Generate(m, prompt32, train.SampleOptions{MaxNewTokens: *maxNew, Temperature: *temperature, TopK: *topK, Seed: *seed, Stop: -1})
	if err != nil {
		return fail(err)
	}
	all := slices.Clone(ids)
	for _, id := range out {
		all = append(all, int(id))
	}
	if _, err := fmt.Fprintln(stdout, tok.Decode(all)); err != nil {
		return fail(err)
	}
	return cli.ExitOK
}

// isSet reports whether the flag name was given.
func isSet(c *cli.Command, name string) bool {
	set := false
	c.Flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// tokenizerFiles are the files spec.Load finds in a directory, in its order.
var tokenizerFiles = []string{"tokenizer.json", "vocab.json", "chars.json"}

// checkpointTokenizer resolves the tokenizer of a checkpoint's training data:
// override (--tokenizer), else the tokenizer files in the dataset directory (data,
// or the run's data key), else the tokenizer the manifest names. Its fingerprint
// must be the checkpoint's (an override that differs gets a warning).
func checkpointTokenizer(ctx context.Context, st *train.State, override, data string, log *slog.Logger) (*tokenize.Tokenizer, error) {
	want := st.Tokenizer
	opts := spec.Options{Logger: log}
	if override != "" {
		tok, err := spec.Load(ctx, override, opts)
		if err != nil {
			return nil, err
		}
		if want.Fingerprint != "" && tok.Fingerprint() != want.Fingerprint {
			log.Warn("the tokenizer's fingerprint is not the one the model was trained with", "tokenizer", override, "trained_with", want.Name)
		}
		return tok, nil
	}
	if data == "" {
		data = st.Config["data"]
	}
	var tried []string
	if fi, err := os.Stat(data); err == nil && fi.IsDir() {
		for _, name := range tokenizerFiles {
			if _, err := os.Stat(filepath.Join(data, name)); err == nil {
				tok, err := spec.Load(ctx, data, opts)
				if err != nil {
					return nil, fmt.Errorf("load the tokenizer beside the data: %w", err)
				}
				if tok.Fingerprint() == want.Fingerprint {
					return tok, nil
				}
				tried = append(tried, fmt.Sprintf("%s has fingerprint %s", filepath.Join(data, name), short(tok.Fingerprint())))
				break
			}
		}
	} else if data != "" {
		tried = append(tried, fmt.Sprintf("the dataset directory %s is not there", data))
	}
	if slices.Contains(spec.Names(), want.Name) {
		tok, err := spec.Load(ctx, want.Name, opts)
		if err != nil {
			return nil, fmt.Errorf("load the dataset's tokenizer %s: %w\n---> HINT: or pass --tokenizer SPEC", want.Name, err)
		}
		if tok.Fingerprint() == want.Fingerprint {
			return tok, nil
		}
		tried = append(tried, fmt.Sprintf("the known %s has fingerprint %s", want.Name, short(tok.Fingerprint())))
	} else {
		tried = append(tried, fmt.Sprintf("%q is not a known tokenizer name", want.Name))
	}
	return nil, fmt.Errorf("no tokenizer with the model's fingerprint %s (tokenizer %s): %s\n---> HINT: pass --tokenizer SPEC (the tokenizer the dataset was made with) or --data DIR (the dataset)",
		short(want.Fingerprint), want.Name, strings.Join(tried, "; "))
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}
