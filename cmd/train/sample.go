package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/internal/cli"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/storage"
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
			"(chars.json for prep shakespeare, tokenizer.json, vocab.json + merges.txt; for a part\n"+
			"DIR/parts/part-* of a partitioned run, beside the run's in DIR; an s3:// dataset's from S3:\n"+
			"--s3-endpoint, else the run's s3_endpoint; for a blend, beside its datasets), else the\n"+
			"tokenizer the dataset's manifest names (gpt2, neox-20b, ...); --tokenizer SPEC overrides it.\n"+
			"Its fingerprint must match the one the model was trained with.")
	ckpt := c.Flags.String("ckpt", "", "the checkpoint or run `DIR` (required)")
	prompt := c.Flags.String("prompt", "", "the `TEXT` to continue (required; \"\" starts from the end-of-document token, if the tokenizer has one)")
	maxNew := c.Flags.Int("max-new-tokens", 500, "generate `N` tokens")
	temperature := c.Flags.Float64("temperature", 0.8, "divide the logits by `T` (0: greedy)")
	topK := c.Flags.Int("top-k", 200, "draw from the `K` most likely tokens (0: all)")
	seed := c.Flags.Uint64("seed", 1337, "the `SEED` of the draws")
	var tf cli.TokenizerFlags
	tf.Register(c.Flags, "the tokenizer instead of the dataset's")
	data := c.Flags.String("data", "", "the dataset `DIR` (or s3://..., or a blend: FILE.yaml, W1:DIR1,W2:DIR2) whose tokenizer to use, when it moved since training")
	var s3 cli.S3Flags // an s3:// --ckpt
	s3.Register(c.Flags)
	device := c.Flags.String("device", "auto", "the `DEVICE`: auto, cpu, ref, cuda or cuda-sim")
	threads := c.Flags.Int("threads", 0, "CPU threads `N` (0: one per CPU)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	switch {
	case *ckpt == "":
		return c.UsageError(stderr, "--ckpt DIR is required")
	case !c.IsSet("prompt"):
		return c.UsageError(stderr, "--prompt TEXT is required")
	case *maxNew < 0:
		return c.UsageError(stderr, "--max-new-tokens must be >= 0")
	case *temperature < 0:
		return c.UsageError(stderr, "--temperature must be >= 0")
	case *topK < 0:
		return c.UsageError(stderr, "--top-k must be >= 0")
	case *threads < 0: // as train refuses it (a negative count ran as one thread per CPU)
		return c.UsageError(stderr, fmt.Sprintf("--threads %d: want >= 0 (0: one per CPU)", *threads))
	case tf.Spec != "" && *data != "":
		return c.UsageError(stderr, "--tokenizer SPEC and --data DIR both name the tokenizer: give one")
	}
	be, err := openBackend(*device, *threads, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return backendFailed(ctx, c, stderr, err)
	}
	fail := func(err error) int { return cli.Fail(stderr, "train sample", cli.Interrupted(ctx, err)) }
	var m *train.Model
	var st *train.State
	err = onDevice(func() (err error) {
		m, st, err = train.LoadCheckpointFrom(ctx, *ckpt, be, storage.Options{S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle})
		return err
	})
	if err != nil {
		return fail(err)
	}
	if err := modelFitsDevice(be, m.Config); err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tok, err := checkpointTokenizer(ctx, st, &tf, *data, s3, log)
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
	var out []int32
	err = onDevice(func() (err error) {
		out, err = train.Generate(m, prompt32, train.SampleOptions{MaxNewTokens: *maxNew, Temperature: *temperature, TopK: *topK, Seed: *seed})
		return err
	})
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

// checkpointTokenizer resolves the tokenizer of a checkpoint's training data:
// --tokenizer, else the dataset's own (spec.ForDataset: the tokenizer files in the
// dataset directory, data or the run's data key, or for a part of a partitioned run
// the run's directory (tokenizerDir); for an s3:// dataset, those files fetched from
// S3: cli.FetchTokenizerBeside; else the tokenizer the manifest names). For a blend (a
// blend file, "W1:PATH1,W2:PATH2"), the files beside its datasets, which must agree
// (the loader refused datasets of different tokenizers when the run trained): the
// model's, with a warning, where they no longer do. Its fingerprint must be the
// checkpoint's (an override that differs gets a warning). s3 are the command's S3
// flags: a dataset on S3 is read from --s3-endpoint when given, else from the server
// the run read it from (its s3_endpoint).
func checkpointTokenizer(ctx context.Context, st *train.State, tf *cli.TokenizerFlags, data string, s3 cli.S3Flags, log *slog.Logger) (*tokenize.Tokenizer, error) {
	want := st.Tokenizer
	if tf.Spec != "" {
		tok, err := tf.Load(ctx, "", log)
		if err != nil {
			return nil, err
		}
		if want.Fingerprint != "" && tok.Fingerprint() != want.Fingerprint {
			log.Warn("the tokenizer's fingerprint is not the one the model was trained with", "tokenizer", tf.Spec, "trained_with", want.Name)
		}
		return tok, nil
	}
	if want.Fingerprint == "" && want.Name == "" {
		// Trained on data that records no tokenizer (bare GPT-NeoX shards, with
		// --vocab-size): there is no tokenizer to look for, but in a dataset the user
		// names (--data DIR), whose manifest records the one it was made with.
		const bare = "\n---> HINT: pass --tokenizer SPEC, the tokenizer that made the shards, or --data DIR, a dataset tokenized with it (its manifest names it)"
		if data == "" {
			return nil, fmt.Errorf("the checkpoint does not record its tokenizer: its data (%s) recorded none (bare GPT-NeoX shards, trained with vocab_size %d)%s", st.Config["data"], st.Model.VocabSize, bare)
		}
		info, err := recordedTokenizer(ctx, st, data, s3)
		if err != nil {
			return nil, fmt.Errorf("the checkpoint does not record its tokenizer (its data, %s, recorded none), and --data %s: %w%s", st.Config["data"], data, err, bare)
		}
		if info.VocabSize > st.Model.VocabSize {
			return nil, fmt.Errorf("--data %s was tokenized with %s, of %d tokens, more than the model's vocab_size %d: not the tokenizer the model was trained with%s", data, info.Name, info.VocabSize, st.Model.VocabSize, bare)
		}
		want = info
	}
	if data == "" {
		data = st.Config["data"]
		if fi, err := os.Stat(data); (err != nil || !fi.IsDir()) && st.DataDir != "" {
			data = st.DataDir // config's data is relative to where train ran
		}
	}
	const hint = "\n---> HINT: pass --tokenizer SPEC (the tokenizer the dataset was made with) or --data DIR (the dataset)"
	datasets := []string{data}
	if ds, err := loader.ParseData(data); err == nil && ds.Blended {
		datasets = blendDatasets(ds)
	}
	var all []besideData
	for _, d := range datasets {
		b, cleanup, err := tokenizerBeside(ctx, st, d, s3, log)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		all = append(all, b)
	}
	use, err := agreeingTokenizer(ctx, all, want, log)
	if err != nil {
		return nil, fmt.Errorf("the model's tokenizer: %w%s", err, hint)
	}
	tok, err := spec.ForDataset(ctx, use.dir, want.Name, want.Fingerprint, tf.Options(log))
	if err != nil {
		err = use.named(err)
		if use.from != "" && use.dir == "" {
			err = fmt.Errorf("%w; there are no tokenizer files beside %s", err, use.data)
		}
		return nil, fmt.Errorf("the model's tokenizer: %w%s", err, hint)
	}
	return tok, nil
}

// recordedTokenizer is the tokenizer the manifest of the dataset data records (for a
// blend, its datasets', which must agree), for a checkpoint that records none: an
// error where one records none either (bare shards) or they differ.
func recordedTokenizer(ctx context.Context, st *train.State, data string, s3 cli.S3Flags) (shards.TokenizerInfo, error) {
	datasets := []string{data}
	if ds, err := loader.ParseData(data); err == nil && ds.Blended {
		datasets = blendDatasets(ds)
	}
	opt := storage.Options{S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle}
	if rc, err := st.RunConfig(); err == nil && opt.S3Endpoint == "" {
		opt.S3Endpoint, opt.S3PathStyle = rc.S3Endpoint, opt.S3PathStyle || rc.S3PathStyle
	}
	var info shards.TokenizerInfo
	for i, d := range datasets {
		if !strings.HasPrefix(d, "s3://") {
			if fi, err := os.Stat(strings.TrimPrefix(d, "file://")); err != nil || !fi.IsDir() {
				return info, fmt.Errorf("%s is not a dataset directory (bare shards record no tokenizer)", d)
			}
		}
		store, err := storage.Open(ctx, d, opt)
		if err != nil {
			return info, err
		}
		m, err := shards.ReadManifest(ctx, store, "")
		if errors.Is(err, shards.ErrMissing) { // (its hint, to re-run the stage, is not this one's)
			return info, fmt.Errorf("%s holds no manifest.json: it records no tokenizer either", d)
		}
		if err != nil {
			return info, err
		}
		if m.Tokenizer.Fingerprint == "" && m.Tokenizer.Name == "" {
			return info, fmt.Errorf("%s records no tokenizer either", d)
		}
		if i > 0 && m.Tokenizer.Fingerprint != info.Fingerprint {
			return info, fmt.Errorf("the blend's datasets were tokenized with different tokenizers, %s (%.12s) and %s (%.12s)", info.Name, info.Fingerprint, m.Tokenizer.Name, m.Tokenizer.Fingerprint)
		}
		info = m.Tokenizer
	}
	return info, nil
}

// besideData says where the tokenizer files of one dataset of the training data are:
// in the local directory dir, or for an s3:// dataset data in a temporary copy dir of
// from's ("" when there are none).
type besideData struct {
	data, dir, from string
}

// named is err with the temporary copy's path replaced by where its files are.
func (b besideData) named(err error) error {
	if b.from == "" || b.dir == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), b.dir, b.from))
}

// tokenizerBeside finds the tokenizer files of the dataset data: tokenizerDir for a
// local one; for an s3:// one, its files fetched through the storage layer from the
// server --s3-endpoint names, else the one the run read its data from (cleanup removes
// the copy).
func tokenizerBeside(ctx context.Context, st *train.State, data string, s3 cli.S3Flags, log *slog.Logger) (besideData, func(), error) {
	if !strings.HasPrefix(data, "s3://") {
		return besideData{data: data, dir: tokenizerDir(data)}, func() {}, nil
	}
	opt := storage.Options{S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle}
	if rc, err := st.RunConfig(); err == nil && opt.S3Endpoint == "" {
		opt.S3Endpoint, opt.S3PathStyle = rc.S3Endpoint, opt.S3PathStyle || rc.S3PathStyle
	}
	dir, from, cleanup, err := cli.FetchTokenizerBeside(ctx, data, opt, log)
	if err != nil {
		return besideData{}, nil, err
	}
	return besideData{data: data, dir: dir, from: from}, cleanup, nil
}

// blendDatasets are the datasets of a blend, each once: the training datasets, then
// the validation and test ones.
func blendDatasets(ds *loader.DataSpec) []string {
	var out []string
	for _, list := range [][]loader.WeightedPath{ds.Train, ds.Valid, ds.Test} {
		for _, wp := range list {
			if !slices.Contains(out, wp.Path) {
				out = append(out, wp.Path)
			}
		}
	}
	return out
}

// agreeingTokenizer picks, among the datasets of the training data, the one whose
// tokenizer files spec.ForDataset is to read: the first that has any (the first dataset
// when none has). The datasets' files must hold one tokenizer: where two differ, the
// one with the model's fingerprint is taken, with a warning naming the two; where none
// has it, the error names two that differ.
func agreeingTokenizer(ctx context.Context, all []besideData, want shards.TokenizerInfo, log *slog.Logger) (besideData, error) {
	if len(all) == 1 {
		return all[0], nil
	}
	type found struct {
		b    besideData
		tok  *tokenize.Tokenizer
		path string
	}
	var beside []found
	for _, b := range all {
		if b.dir == "" {
			continue
		}
		if fi, err := os.Stat(b.dir); err != nil || !fi.IsDir() {
			continue // ForDataset says so, if it is the one
		}
		tok, path, err := spec.Beside(ctx, b.dir, want.Fingerprint)
		if err != nil {
			return besideData{}, b.named(err)
		}
		if tok != nil {
			if b.from != "" {
				path = strings.Replace(path, b.dir, b.from, 1)
			}
			beside = append(beside, found{b, tok, path})
		}
	}
	if len(beside) == 0 {
		return all[0], nil
	}
	describe := func(f found) string {
		return fmt.Sprintf("%s (fingerprint %.12s)", f.path, f.tok.Fingerprint())
	}
	first := beside[0]
	for _, other := range beside[1:] {
		if other.tok.Fingerprint() == first.tok.Fingerprint() {
			continue
		}
		for _, f := range beside {
			if f.tok.Fingerprint() != want.Fingerprint {
				continue
			}
			differs := first
			if first.tok.Fingerprint() == want.Fingerprint {
				differs = other
			}
			log.Warn("the blend's datasets hold different tokenizers: using the model's", "tokenizer", describe(f), "other", describe(differs))
			return f.b, nil
		}
		return besideData{}, fmt.Errorf("the blend's datasets hold different tokenizers, %s and %s, and the model was trained with %s (fingerprint %.12s)",
			describe(first), describe(other), want.Name, want.Fingerprint)
	}
	return first.b, nil
}

// tokenizerDir is the directory holding the tokenizer files of the local dataset dir:
// dir itself, or for a part of a partitioned run (DIR/parts/part-00000-of-00004:
// shards.PartParent) that has none of its own, DIR, where tokenize run keeps them once
// for all its parts (as shards cat --decode finds them).
func tokenizerDir(dir string) string {
	has := func(dir string) bool {
		for _, f := range spec.DatasetFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return true
			}
		}
		return false
	}
	if dir == "" || has(dir) {
		return dir
	}
	if parent, ok := shards.PartParent(filepath.ToSlash(dir)); ok && has(filepath.FromSlash(parent)) {
		return filepath.FromSlash(parent)
	}
	return dir
}
