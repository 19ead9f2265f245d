package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"gptkit/internal/cli"
	"gptkit/storage"
	"gptkit/train"
	"gptkit/train/hfgpt2"
)

// runExport implements `train export`.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "export", "--ckpt DIR --format hf --out DIR2 [--tokenizer SPEC | --data DIR | --no-tokenizer]",
		"Writes the model of a checkpoint as a Hugging Face GPT2LMHeadModel directory: DIR2/"+hfgpt2.WeightsName+"\n"+
			"and DIR2/"+hfgpt2.ConfigName+" (transformers' GPT2LMHeadModel.from_pretrained(DIR2) loads it; the\n"+
			"padded vocabulary rows are dropped; a bias-free model gets zero biases), and the tokenizer the\n"+
			"model was trained with as DIR2/"+hfgpt2.TokenizerName+" and DIR2/"+hfgpt2.TokenizerConfigName+" (AutoTokenizer and\n"+
			"pipeline(\"text-generation\", model=DIR2) load them; found as train sample finds it;\n"+
			"cl100k_base and o200k_base as HF's conversion of them; GPT-NeoX's byte tokenizer and\n"+
			"r50k_base have no such form and are left out, with a warning). train\n"+
			"--init-from DIR2 starts a run from such a directory. DIR is a checkpoint directory or a run\n"+
			"directory (its newest checkpoint). stdout gets DIR2.")
	ckpt := c.Flags.String("ckpt", "", "the checkpoint or run `DIR` (required)")
	var s3 cli.S3Flags // an s3:// --ckpt
	s3.Register(c.Flags)
	format := c.Flags.String("format", "hf", "the `FORMAT`: hf (Hugging Face GPT-2)")
	out := c.Flags.String("out", "", "the output `DIR2` (created if missing; its files are replaced) (required)")
	var tf cli.TokenizerFlags
	tf.Register(c.Flags, "the tokenizer to write instead of the dataset's")
	data := c.Flags.String("data", "", "the dataset `DIR` (or s3://..., or a blend: FILE.yaml, W1:DIR1,W2:DIR2) whose tokenizer to write, when it moved since training")
	noTokenizer := c.Flags.Bool("no-tokenizer", false, "write the model only (no "+hfgpt2.TokenizerName+")")
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
	case *noTokenizer && (tf.Spec != "" || *data != ""):
		return c.UsageError(stderr, "--no-tokenizer writes no tokenizer: leave out --tokenizer and --data")
	case tf.Spec != "" && *data != "":
		return c.UsageError(stderr, "--tokenizer SPEC and --data DIR both name the tokenizer: give one")
	}
	fail := func(err error) int { return cli.Fail(stderr, "train export", cli.Interrupted(ctx, err)) }
	be, err := openBackend("ref", 1, slog.New(slog.DiscardHandler)) // only holds the weights
	if err != nil {
		return fail(err)
	}
	m, st, err := train.LoadCheckpointFrom(ctx, *ckpt, be, storage.Options{S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle})
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// The tokenizer first: a checkpoint whose tokenizer cannot be found writes nothing.
	var tokJSON []byte
	var tokCfg hfgpt2.TokenizerConfig
	if !*noTokenizer {
		if tokJSON, tokCfg, err = exportTokenizer(ctx, st, &tf, *data, s3, m.Config, log); err != nil {
			return fail(fmt.Errorf("%w\n---> HINT: --no-tokenizer exports the model alone", err))
		}
	}
	if err := train.ExportHF(*out, m, st); err != nil {
		return fail(err)
	}
	if tokJSON != nil {
		if err := hfgpt2.WriteTokenizer(*out, tokJSON, tokCfg); err != nil {
			return fail(err)
		}
	}
	// After the new tokenizer is written: a write that fails leaves the earlier files.
	if err := removeStaleTokenizer(*out, tokJSON != nil, log); err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, *out)
	return cli.ExitOK
}

// exportTokenizer is the tokenizer.json of the checkpoint's tokenizer (found as train
// sample finds it) and what tokenizer_config.json says of it; nil, with a warning, when
// the tokenizer has no Hugging Face form or the checkpoint names none (and neither
// --tokenizer nor --data does).
func exportTokenizer(ctx context.Context, st *train.State, tf *cli.TokenizerFlags, data string, s3 cli.S3Flags, mc train.ModelConfig, log *slog.Logger) ([]byte, hfgpt2.TokenizerConfig, error) {
	if tf.Spec == "" && data == "" && st.Tokenizer.Fingerprint == "" {
		log.Warn("the checkpoint does not record its tokenizer: writing the model without " + hfgpt2.TokenizerName + " (--tokenizer SPEC, or --data DIR of a dataset made with it, writes one)")
		return nil, hfgpt2.TokenizerConfig{}, nil
	}
	tok, err := checkpointTokenizer(ctx, st, tf, data, s3, log)
	if err != nil && tf.Spec == "" && st.Tokenizer.Fingerprint == "" {
		// Only --data was to name it, and it does not (bare shards too): the
		// model is what export is for.
		log.Warn("writing the model without "+hfgpt2.TokenizerName+": the checkpoint does not record its tokenizer and --data does not give one (--tokenizer SPEC writes one)", "reason", err)
		return nil, hfgpt2.TokenizerConfig{}, nil
	}
	if err != nil {
		return nil, hfgpt2.TokenizerConfig{}, err
	}
	if tok.VocabSize() > mc.VocabSize {
		return nil, hfgpt2.TokenizerConfig{}, fmt.Errorf("tokenizer %s has %d tokens, the model's vocabulary %d: it cannot be this model's tokenizer", tok.Name(), tok.VocabSize(), mc.VocabSize)
	}
	var buf bytes.Buffer
	if err := tok.WriteHFJSON(&buf); err != nil {
		log.Warn("writing the model without "+hfgpt2.TokenizerName, "tokenizer", tok.Name(), "reason", err)
		return nil, hfgpt2.TokenizerConfig{}, nil
	}
	cfg := hfgpt2.TokenizerConfig{ModelMaxLength: mc.BlockSize, AddPrefixSpace: tok.AddPrefixSpace()}
	if eod := tok.EOD(); eod >= 0 {
		for _, a := range tok.AddedTokens() {
			if a.ID == eod {
				cfg.EOS = a.Content
			}
		}
		if cfg.EOS == "" {
			log.Warn("the end-of-document token is no added token of the tokenizer: "+hfgpt2.TokenizerConfigName+" names no eos_token (config.json's eos_token_id still ends generation)", "id", eod)
		}
	}
	return buf.Bytes(), cfg, nil
}

// staleTokenizerFiles are the tokenizer files that an earlier export, or transformers'
// save_pretrained, may have left in an export's directory. transformers reads the ones
// export does not write too (special_tokens_map.json's tokens, added_tokens.json's
// tokens, a slow tokenizer's vocab.json and merges.txt), so they would describe another
// model's tokenizer beside this one's.
var staleTokenizerFiles = []string{hfgpt2.TokenizerName, hfgpt2.TokenizerConfigName,
	"special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt"}

// removeStaleTokenizer removes staleTokenizerFiles from dir after export wrote this
// model's tokenizer (wrote: its two files stay) or left it out, naming those export does
// not write itself.
func removeStaleTokenizer(dir string, wrote bool, log *slog.Logger) error {
	for _, name := range staleTokenizerFiles {
		if wrote && (name == hfgpt2.TokenizerName || name == hfgpt2.TokenizerConfigName) {
			continue
		}
		err := os.Remove(filepath.Join(dir, name))
		switch {
		case err == nil && name != hfgpt2.TokenizerName && name != hfgpt2.TokenizerConfigName:
			log.Warn("removed an earlier tokenizer's file from the export directory: it would not be this model's", "file", filepath.Join(dir, name))
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("remove an earlier tokenizer's file: %w", err)
		}
	}
	return nil
}
