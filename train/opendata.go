package train

import (
	"context"
	"errors"
	"fmt"

	"gptkit/loader"
	"gptkit/shards"
)

// openData opens cfg.Data for t.numSamples. GPT-NeoX's order serves one sample fewer
// than the index holds (loader.Index.Len: GPT-NeoX's own off-by-one), so when the
// index holds exactly the samples asked for, the last step or evaluation would find
// one missing; the split is then opened again for one more sample (an index GPT-NeoX
// would build for that count; GPT-NeoX itself could not run this configuration to
// its end) and the run says so. The count asked for is what checkpoints record and a
// resumed run computes the same way.
func (t *Trainer) openData(ctx context.Context) error {
	cfg := t.cfg
	need := t.numSamples // what the run reads; t.numSamples may grow by one
	for attempt := 0; ; attempt++ {
		d, err := loader.Open(ctx, loader.Options{Data: cfg.Data, SeqLen: cfg.BlockSize, Seed: uint32(cfg.Seed), Order: cfg.Order,
			Split: cfg.Split, NumSamples: t.numSamples, CacheDir: cfg.CacheDir, VocabSize: cfg.VocabSize, S3Endpoint: cfg.S3Endpoint,
			S3PathStyle: cfg.S3PathStyle, Logger: t.log})
		if err != nil {
			if fe := (*shards.FormatError)(nil); cfg.InitFrom != "" && errors.As(err, &fe) && errors.Is(err, shards.ErrVocab) {
				// The vocabulary is init_from's: the data is not what is wrong.
				named := *fe
				named.Hint = fmt.Sprintf("the weights of init_from %s (vocab_size %d) were trained on another tokenizer's ids than %s holds: tokenize the data with the tokenizer the weights were trained with, or train without init_from", cfg.InitFrom, cfg.VocabSize, cfg.Data)
				return fmt.Errorf("train: open the data: %w", &named)
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
				if attempt > 0 || cfg.Order != loader.OrderNeoX || n != want-1 {
					d.Close()
					return fmt.Errorf("train: open the data: the %s split serves %d samples, the run needs %d", loader.SplitNames[k], n, want)
				}
				t.log.Warn("GPT-NeoX's order serves one sample fewer than its index holds, and this run needs every one: building the index for one more (the sample order differs from the one for the exact count, which GPT-NeoX could not finish)",
					"split", loader.SplitNames[k], "samples", want)
				t.numSamples[k]++
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
