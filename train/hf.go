package train

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gptkit/kernels"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/train/hfgpt2"
)

// The bridge to Hugging Face GPT-2 directories (train/hfgpt2): export writes one,
// init_from starts a run from one.

// ExportHF writes the model as a Hugging Face GPT2LMHeadModel directory
// (model.safetensors and config.json) in dir. st, if not nil, supplies the dropout
// and the end-of-document id written to config.json. The weights are read tensor by
// tensor as the file is written (from a device, through one host buffer): beyond the
// model, host memory holds about two of its largest tensor (one transposed), where
// a copy of all the weights and transposed copies of most of them were made first
// (12-18 GB at 1.5B parameters).
func ExportHF(dir string, m *Model, st *State) error {
	hc := hfConfig(m, st)
	// Made durably (hfgpt2.Export would make it with a plain os.MkdirAll).
	if err := mkdirAll(dir); err != nil {
		return fmt.Errorf("train: export to %s: %w", dir, err)
	}
	byName := make(map[string]TensorInfo, len(m.Tensors))
	for _, ti := range m.Tensors {
		byName[ti.Name] = ti
	}
	for _, p := range hfgpt2.Params(hc) {
		if ti, ok := byName[p.Name]; !ok || !slices.Equal(ti.Shape, p.Shape) {
			return fmt.Errorf("train: internal error: export to %s: the model has no tensor %s of shape %v (a GPT-2 of its config has)", dir, p.Name, p.Shape)
		}
	}
	if n := len(hfgpt2.Params(hc)); n != len(m.Tensors) {
		return fmt.Errorf("train: internal error: export to %s: the model has %d tensors, a GPT-2 of its config %d", dir, len(m.Tensors), n)
	}
	read := func(name string, dst []float32) error {
		ti := byName[name]
		if len(dst) > ti.Size {
			return fmt.Errorf("train: internal error: %d values asked of tensor %s, which has %d", len(dst), name, ti.Size)
		}
		if m.Params.IsHost() {
			copy(dst, m.Params.Float32s()[ti.Offset:ti.Offset+len(dst)])
		} else {
			m.be.Download(kernels.Float32Bytes(dst), m.Params.Slice(ti.Offset, ti.Offset+len(dst)))
		}
		return nil
	}
	if err := hfgpt2.ExportFunc(dir, hc, read); err != nil {
		return fmt.Errorf("train: export to %s: %w", dir, err)
	}
	return nil
}

// hfConfig is the Hugging Face config of m (st, if not nil, supplying the dropout and
// the end-of-document id).
func hfConfig(m *Model, st *State) hfgpt2.Config {
	mc := m.Config
	hc := hfgpt2.Config{VocabSize: mc.VocabSize, PaddedVocab: mc.PaddedVocab, NLayer: mc.NLayer, NHead: mc.NHead,
		NEmbd: mc.NEmbd, BlockSize: mc.BlockSize, Bias: mc.Bias, LayerNormEps: 1e-5}
	if st != nil {
		if d, err := strconv.ParseFloat(st.Config["dropout"], 64); err == nil {
			hc.Dropout = d
		}
		if eod := st.Tokenizer.EODID; eod >= 0 && st.Tokenizer.Fingerprint != "" {
			hc.EOSTokenID = &eod
		}
		hc.Tokenizer, hc.TokenizerFingerprint = st.Tokenizer.Name, st.Tokenizer.Fingerprint
	}
	return hc
}

// InitShape reads the model shape of a Hugging Face GPT-2 directory (for init_from:
// a command fills the shape keys a user did not set from it): its config.json and
// the header of its model.safetensors, not its weights.
func InitShape(dir string) (ModelConfig, error) {
	d, err := openInit(dir)
	if err != nil {
		return ModelConfig{}, err
	}
	d.Close()
	return InitShapeOf(d), nil
}

// OpenInit opens init_from's Hugging Face directory dir (its config.json and
// model.safetensors' header read, not its weights) for a command that takes the
// model shape from it (InitShapeOf) and hands it to the run (Config.InitOpened),
// which then reads neither again. The caller closes it unless a run took it.
func OpenInit(dir string) (*hfgpt2.Dir, error) { return openInit(dir) }

// InitShapeOf is the model shape of init_from's opened directory d.
func InitShapeOf(d *hfgpt2.Dir) ModelConfig {
	hc := d.Config()
	return ModelConfig{VocabSize: hc.VocabSize, PaddedVocab: hc.PaddedVocab, NLayer: hc.NLayer, NHead: hc.NHead,
		NEmbd: hc.NEmbd, BlockSize: hc.BlockSize, Bias: hc.Bias}
}

// initFrom loads the weights of a Hugging Face GPT-2 directory. Its shape must be
// the run's, except that a longer context is cropped to block_size (nanoGPT's
// crop_block_size: the first block_size rows of wpe). Each tensor goes into its
// place in the weights as it is read (hfgpt2.ImportFunc; to a device through one
// host buffer): beyond the model, the host holds about two of its largest tensor,
// where it held three copies of the weights at the peak (all the tensors read, the
// Conv1D weights transposed into copies, a copy laid out like the weights: 18 GB at
// 1.5B parameters). The directory's config.json and header are those checkInitData
// read (initDir).
func (t *Trainer) initFrom(dir string) error {
	src, err := t.initDir(dir)
	if err != nil {
		return err
	}
	hc := src.Config()
	m := t.model
	mc := m.Config
	got := ModelConfig{VocabSize: hc.VocabSize, PaddedVocab: hc.PaddedVocab, NLayer: hc.NLayer, NHead: hc.NHead,
		NEmbd: hc.NEmbd, BlockSize: mc.BlockSize, Bias: hc.Bias}
	if got != mc || hc.BlockSize < mc.BlockSize {
		got.BlockSize = hc.BlockSize
		cmp := got // the keys that differ, a smaller block_size (cropped) not among them
		if hc.BlockSize >= mc.BlockSize {
			cmp.BlockSize = mc.BlockSize
		}
		changed, flags := shapeChanges(cmp, mc)
		return fmt.Errorf("train: init_from %s: its model is %s, this run's is %s (%s)\n---> HINT: leave the shape keys unset to take them from %s, or give its values (%s; block_size may be smaller: wpe is cropped)", dir, got, mc, changed, dir, flags)
	}
	byName := make(map[string]TensorInfo, len(m.Tensors))
	for _, ti := range m.Tensors {
		byName[ti.Name] = ti
	}
	seen := make(map[string]bool, len(m.Tensors))
	dest := destOf(m.be, m.Params)
	err = src.Import(func(name string, vals []float32) error {
		ti, ok := byName[name]
		if !ok {
			return nil // (none: the shapes are the same)
		}
		if len(vals) < ti.Size {
			return fmt.Errorf("train: init_from %s: tensor %s has %d values, want %d", dir, name, len(vals), ti.Size)
		}
		vals = vals[:ti.Size] // wpe: the first block_size rows
		seen[name] = true
		if dest.host != nil {
			copy(dest.host[ti.Offset:ti.Offset+ti.Size], vals)
			return nil
		}
		return dest.put(ti.Offset, vals)
	})
	if err != nil {
		return fmt.Errorf("train: init_from: %w", err)
	}
	for _, ti := range m.Tensors {
		if !seen[ti.Name] {
			return fmt.Errorf("train: init_from %s: no tensor %s", dir, ti.Name)
		}
	}
	m.SyncWork()
	return nil
}

// nanoGPTInit says what to do instead of nanoGPT's init_from values (its config
// files carried over set them), where no directory of that name exists.
var nanoGPTInit = map[string]string{
	"scratch": "leave init_from unset: a run starts from seeded weights",
	"resume":  "leave init_from unset: running the same command again continues the run (or set resume to a run or checkpoint directory)",
}

func init() {
	for _, size := range []string{"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"} {
		nanoGPTInit[size] = "nanoGPT downloads OpenAI's weights; give a directory of Hugging Face's " + size +
			" (config.json and model.safetensors: huggingface-cli download openai-community/" + size + " --local-dir " + size + ")"
	}
}

// initDir is init_from's directory dir, opened once (openInit) for the run: the
// check of its tokenizer (checkInitData) and the reading of its weights (initFrom)
// read its config.json and model.safetensors' header once, where each read them
// (and initFrom twice). Closed once the weights are read, or by Close.
func (t *Trainer) initDir(dir string) (*hfgpt2.Dir, error) {
	if t.initPath != dir || (t.init == nil && t.initErr == nil) {
		t.closeInit()
		t.initPath = dir
		t.init, t.initErr = openInit(dir)
	}
	return t.init, t.initErr
}

// closeInit closes init_from's directory, if initDir opened it.
func (t *Trainer) closeInit() {
	if t.init != nil {
		t.init.Close()
	}
	t.init, t.initErr, t.initPath = nil, nil, ""
}

// openInit opens init_from's Hugging Face directory (hfgpt2.OpenDir: its shape
// read); when dir is a train run or one of its checkpoints instead, the error says
// how to continue it (resume) or start from its weights (export first).
func openInit(dir string) (*hfgpt2.Dir, error) {
	d, err := hfgpt2.OpenDir(dir)
	if err == nil {
		return d, nil
	}
	if _, serr := os.Stat(dir); serr != nil {
		if hint, ok := nanoGPTInit[dir]; ok {
			return nil, fmt.Errorf("train: init_from %s is nanoGPT's init_from %q, and no directory here\n---> HINT: %s", dir, dir, hint)
		}
	}
	for _, marker := range []string{CheckpointsDir, StateFile, ConfigName} {
		if _, serr := os.Stat(filepath.Join(dir, marker)); serr == nil {
			return nil, fmt.Errorf("train: init_from: %w\n---> HINT: %s is a train run or checkpoint: --resume %s continues it; to start a new run from its weights, export them first (train export --ckpt %s --out HF_DIR) and give --init-from HF_DIR", err, dir, dir, dir)
		}
	}
	return nil, fmt.Errorf("train: init_from: %w", err)
}

// checkInitData refuses, before the data is opened, data tokenized otherwise than
// the weights of init_from were trained: opening it checks every token id against
// init_from's vocabulary, and failed at the first id outside it, naming neither
// tokenizer. The data's tokenizer (its manifest's) is compared with the one
// init_from holds (its tokenizer.json, through cfg.CheckInitTokenizer), the one
// gptkit's export records in its config.json, and, where neither is there, with its
// vocabulary size. Data whose manifest cannot be read here is left to openData.
func (t *Trainer) checkInitData(ctx context.Context) error {
	cfg := t.cfg
	p, m := dataManifest(ctx, cfg)
	if m == nil {
		return nil
	}
	t.dataManifests = map[string]*shards.Manifest{p: m} // openData's: not read again
	data := m.Tokenizer
	if data.Fingerprint == "" {
		return nil
	}
	if cfg.CheckInitTokenizer != nil {
		if err := cfg.CheckInitTokenizer(cfg.InitFrom, data); err != nil {
			return err
		}
		t.initTokChecked = data.Fingerprint
	}
	src, err := t.initDir(cfg.InitFrom)
	if err != nil {
		return nil // initFrom says why
	}
	hc := src.Config()
	hint := "\n---> HINT: tokenize the data with the tokenizer the weights were trained with (the one of their training data), or train without init_from"
	switch {
	case hc.TokenizerFingerprint != "" && hc.TokenizerFingerprint != data.Fingerprint:
		return fmt.Errorf("train: init_from %s was trained on the ids of tokenizer %s (fingerprint %.12s, vocabulary %d), but %s holds ids of tokenizer %s (fingerprint %.12s, vocabulary %d): the same ids are other text to these weights%s",
			cfg.InitFrom, hc.Tokenizer, hc.TokenizerFingerprint, hc.VocabSize, cfg.Data, data.Name, data.Fingerprint, data.VocabSize, hint)
	case hc.TokenizerFingerprint == "" && data.VocabSize > hc.VocabSize:
		return fmt.Errorf("train: init_from %s was trained on a tokenizer of %d tokens (which one it does not record: no tokenizer.json), but %s holds ids of tokenizer %s, of %d: the weights were trained on another tokenizer's ids%s",
			cfg.InitFrom, hc.VocabSize, cfg.Data, data.Name, data.VocabSize, hint)
	}
	return nil
}

// dataTokenizer is the tokenizer cfg.Data's manifest records (its first dataset's:
// the loader refuses a blend of several), read without opening the data; ok is
// false where there is no manifest (bare GPT-NeoX shards) or it cannot be read.
func dataTokenizer(ctx context.Context, cfg Config) (_ shards.TokenizerInfo, ok bool) {
	if _, m := dataManifest(ctx, cfg); m != nil {
		return m.Tokenizer, true
	}
	return shards.TokenizerInfo{}, false
}

// dataManifest is the manifest of cfg.Data's first dataset and that dataset's
// location as loader.ParseData gives it (the key of loader.Options.Manifests), read
// without opening the data; m is nil where there is no manifest (bare GPT-NeoX
// shards) or it cannot be read.
func dataManifest(ctx context.Context, cfg Config) (loc string, m *shards.Manifest) {
	spec, err := loader.ParseData(cfg.Data)
	if err != nil || len(spec.Train) == 0 {
		return "", nil
	}
	loc = spec.Train[0].Path
	p := loc
	if !strings.HasPrefix(p, "s3://") {
		p = strings.TrimPrefix(p, "file://")
		if _, err := os.Stat(filepath.Join(p, shards.ManifestName)); err != nil {
			return "", nil
		}
	}
	st, err := storage.Open(ctx, p, storage.Options{S3Endpoint: cfg.S3Endpoint, S3PathStyle: cfg.S3PathStyle, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", nil
	}
	if m, err = shards.ReadManifest(ctx, st, ""); err != nil {
		return "", nil
	}
	return loc, m
}
