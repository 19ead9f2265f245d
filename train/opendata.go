package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gptkit/loader"
	"gptkit/shards"
	"gptkit/train/hfgpt2"
)

// openData opens cfg.Data for t.numSamples. GPT-NeoX's order serves one sample fewer
// than the index holds (loader.Index.Len: GPT-NeoX's own off-by-one), so when the
// index holds exactly the samples asked for, the last step or evaluation would find
// one missing; the split is then opened again for one more sample (an index GPT-NeoX
// would build for that count; GPT-NeoX itself could not run this configuration to
// its end) and the run says so. A blend, as long as its datasets' lengths together,
// can be short by one per dataset, and is opened again for that many more (each
// dataset's index then holds at least 1.005 times its share of the count: together
// at least what the run needs). The count asked for is what checkpoints record and a
// resumed run computes the same way.
func (t *Trainer) openData(ctx context.Context) error {
	cfg := t.cfg
	need := t.numSamples // what the run reads; t.numSamples may grow by one
	for attempt := 0; ; attempt++ {
		d, err := loader.Open(ctx, loader.Options{Data: cfg.Data, SeqLen: cfg.BlockSize, Seed: uint32(cfg.Seed), Order: cfg.Order,
			Split: cfg.Split, NumSamples: t.numSamples, CacheDir: cfg.CacheDir, VocabSize: cfg.VocabSize, S3Endpoint: cfg.S3Endpoint,
			S3PathStyle: cfg.S3PathStyle, Manifests: t.dataManifests, Logger: t.log})
		if err != nil {
			if fe := (*shards.FormatError)(nil); cfg.InitFrom != "" && errors.As(err, &fe) && errors.Is(err, shards.ErrVocab) && !errors.Is(err, shards.ErrNegativeID) {
				// The vocabulary is init_from's: the data is not what is wrong (unless
				// the data records its tokenizer, which was checked against init_from's:
				// then the id is outside its own, and initVocabHint says it is damage).
				named := *fe
				named.Hint = initVocabHint(ctx, cfg)
				return fmt.Errorf("train: open the data: %w", &named)
			}
			if fe := (*shards.FormatError)(nil); cfg.InitFrom == "" && cfg.VocabSize > 0 && errors.As(err, &fe) && errors.Is(err, shards.ErrVocab) && !errors.Is(err, shards.ErrNegativeID) {
				// The vocabulary is this run's vocab_size: the data is not what is
				// wrong (unless the data's tokenizer is the smaller vocabulary: then
				// the id is outside the data's own, and its hint stands).
				if hint, ok := vocabSizeHint(ctx, cfg); ok {
					named := *fe
					named.Hint = hint
					return fmt.Errorf("train: open the data: %w", &named)
				}
			}
			if es := (*loader.EmptySplitError)(nil); errors.As(err, &es) && es.Split == loader.Valid {
				return fmt.Errorf("train: open the data: %w\n---> HINT: with no valid split, set eval_steps 0 (--eval-steps 0) to train without evaluation", err)
			}
			return fmt.Errorf("train: open the data: %w", err)
		}
		short := false
		for k, want := range need {
			if want == 0 {
				continue
			}
			if n := d.Split(k).Len(); n < want {
				// A blend serves its datasets' lengths together: up to one fewer per dataset.
				more := int64(1)
				if b, ok := d.Split(k).(*loader.Blend); ok {
					more = int64(len(b.Sources))
				}
				if attempt > 0 || cfg.Order != loader.OrderNeoX || want-n > more {
					d.Close()
					return fmt.Errorf("train: open the data: the %s split serves %d samples, the run needs %d", loader.SplitNames[k], n, want)
				}
				t.log.Warn("GPT-NeoX's order serves one sample fewer than its index holds (a blend: one fewer per dataset), and this run needs every one: building the index for more (the sample order differs from the one for the exact count, which GPT-NeoX could not finish)",
					"split", loader.SplitNames[k], "samples", want, "index_for", want+more)
				t.numSamples[k] = want + more
				short = true
			}
		}
		if !short {
			t.data = d
			return nil
		}
		d.Close()
	}
}

// vocabSizeHint is the next step when cfg.Data holds an id outside the vocabulary
// that vocab_size set (without init_from): a vocab_size below the data's tokenizer's,
// not the data, is what is wrong.
// ok is false where the data's tokenizer has no more tokens than vocab_size: the
// id is outside the data's own vocabulary (damaged data), which no vocab_size fixes.
func vocabSizeHint(ctx context.Context, cfg Config) (_ string, ok bool) {
	if data, ok := dataTokenizer(ctx, cfg); ok && data.VocabSize > cfg.VocabSize {
		return fmt.Sprintf("vocab_size %d (--vocab-size) is smaller than the vocabulary of %s's tokenizer %s (%d tokens): set vocab_size 0 (the tokenizer's) or at least %d",
			cfg.VocabSize, cfg.Data, data.Name, data.VocabSize, data.VocabSize), true
	} else if ok && data.VocabSize > 0 {
		return "", false
	}
	return fmt.Sprintf("vocab_size %d (--vocab-size) is smaller than the ids %s holds: set vocab_size to the vocabulary of the tokenizer that made them (0: the one the manifest names)",
		cfg.VocabSize, cfg.Data), true
}

// initVocabHint is the next step when cfg.Data holds an id outside the vocabulary of
// init_from's weights. Data whose manifest records its tokenizer was compared with
// init_from's before it was opened (checkInitData), and is opened only where it
// passed: the same tokenizer, or one of no more tokens, so the id is outside the
// data's own vocabulary too, and the data is damaged. Data that records none (bare
// GPT-NeoX shards: no manifest) could not be, and the hint says so, naming the
// tokenizer init_from records (config.json's gptkit.tokenizer, its tokenizer.json)
// and how to tokenize the text with it.
func initVocabHint(ctx context.Context, cfg Config) string {
	if data, ok := dataTokenizer(ctx, cfg); ok && data.Fingerprint != "" {
		return fmt.Sprintf("%s records tokenizer %s (%d tokens), found to fit init_from %s before the data was opened, so the id is outside the data's own tokenizer: the .bin is damaged; `shards verify %s` finds every damaged file: restore them, or re-run the stage that wrote the dataset",
			cfg.Data, data.Name, data.VocabSize, cfg.InitFrom, cfg.Data)
	}
	file := filepath.Join(cfg.InitFrom, "tokenizer.json")
	fi, err := os.Stat(file)
	hasFile := err == nil && fi.Mode().IsRegular()
	name := ""
	if hc, err := hfgpt2.ReadConfig(cfg.InitFrom); err == nil {
		name = hc.Tokenizer
	}
	var theirs, spec string
	switch {
	case name != "" && hasFile:
		theirs, spec = fmt.Sprintf("tokenizer %s (vocab_size %d: %s)", name, cfg.VocabSize, file), cfg.InitFrom
	case name != "":
		theirs, spec = fmt.Sprintf("tokenizer %s (vocab_size %d)", name, cfg.VocabSize), name
	case hasFile:
		theirs, spec = fmt.Sprintf("the tokenizer of %s (vocab_size %d)", file, cfg.VocabSize), cfg.InitFrom
	default:
		theirs, spec = fmt.Sprintf("a tokenizer of vocab_size %d that it does not name", cfg.VocabSize), "SPEC"
	}
	return fmt.Sprintf("%s records no tokenizer (no manifest.json: bare GPT-NeoX shards?), so it could not be checked against init_from's before it was opened: "+
		"init_from %s was trained on %s, whose ids these are not. "+
		"Tokenize the text with that tokenizer (tokenize run --tokenizer %s ..., which writes a manifest naming it), or train without init_from (--vocab-size N, as bare shards need)",
		cfg.Data, cfg.InitFrom, theirs, spec)
}
