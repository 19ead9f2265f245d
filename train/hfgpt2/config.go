package hfgpt2

import (
	"encoding/json"
	"fmt"
	"math"
)

// Config is a GPT-2-style model's shape.
type Config struct {
	VocabSize    int     // tokens the tokenizer has (HF vocab_size)
	PaddedVocab  int     // rows of our wte: VocabSize rounded up to a multiple of 64
	NLayer       int     // transformer blocks
	NHead        int     // attention heads
	NEmbd        int     // channels C
	BlockSize    int     // context length, rows of wpe (HF n_positions)
	Bias         bool    // linear layers and LayerNorms have biases
	LayerNormEps float64 // 1e-5 for GPT-2 and nanoGPT; 0 means 1e-5
	// Dropout is written as HF's resid/embd/attn dropout (0 for a model trained
	// without dropout; HF's own default is 0.1).
	Dropout float64
	// EOSTokenID, when set, is written as bos_token_id and eos_token_id (GPT-2: 50256).
	EOSTokenID *int
	// Tokenizer and TokenizerFingerprint name the tokenizer whose ids the model was
	// trained on, as the training data's manifest did: gptkit's export records them
	// in config.json's gptkit section (a tokenizer.json cannot always say it: a
	// chars.json or byte tokenizer has none); empty for other directories.
	Tokenizer, TokenizerFingerprint string
}

// PadVocab rounds a vocabulary size up to a multiple of 64, the padded vocabulary gptkit
// (like nanoGPT and llm.c) uses for wte and the logits.
func PadVocab(v int) int { return (v + 63) / 64 * 64 }

func (c Config) eps() float64 {
	if c.LayerNormEps == 0 {
		return 1e-5
	}
	return c.LayerNormEps
}

// Check reports a shape that cannot be a GPT-2 model.
func (c Config) Check() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}

func (c Config) check() error {
	switch {
	case c.VocabSize < 1 || c.NLayer < 1 || c.NHead < 1 || c.NEmbd < 1 || c.BlockSize < 1:
		return fmt.Errorf("%+v: vocab size, layers, heads, channels and block size must be positive", c)
	case c.PaddedVocab < c.VocabSize:
		return fmt.Errorf("padded vocabulary %d is smaller than the vocabulary %d", c.PaddedVocab, c.VocabSize)
	case c.NEmbd%c.NHead != 0:
		return fmt.Errorf("%d channels do not divide into %d heads", c.NEmbd, c.NHead)
	case c.LayerNormEps < 0 || math.IsNaN(c.LayerNormEps) || c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("layer norm epsilon %v or dropout %v out of range", c.LayerNormEps, c.Dropout)
	}
	return nil
}

// Param is one of our named tensors and its shape.
type Param struct {
	Name  string
	Shape []int
}

// Params lists the model's tensors in gptkit's names and layout, in model order (wte,
// wpe, each block's ln_1, attn, ln_2, mlp, then ln_f); biases only when c.Bias.
func Params(c Config) []Param {
	C := c.NEmbd
	var ps []Param
	add := func(name string, shape ...int) { ps = append(ps, Param{name, shape}) }
	addB := func(name string, shape ...int) {
		if c.Bias {
			add(name, shape...)
		}
	}
	add("transformer.wte.weight", c.PaddedVocab, C)
	add("transformer.wpe.weight", c.BlockSize, C)
	for i := range c.NLayer {
		p := fmt.Sprintf("transformer.h.%d.", i)
		add(p+"ln_1.weight", C)
		addB(p+"ln_1.bias", C)
		add(p+"attn.c_attn.weight", 3*C, C)
		addB(p+"attn.c_attn.bias", 3*C)
		add(p+"attn.c_proj.weight", C, C)
		addB(p+"attn.c_proj.bias", C)
		add(p+"ln_2.weight", C)
		addB(p+"ln_2.bias", C)
		add(p+"mlp.c_fc.weight", 4*C, C)
		addB(p+"mlp.c_fc.bias", 4*C)
		add(p+"mlp.c_proj.weight", C, 4*C)
		addB(p+"mlp.c_proj.bias", C)
	}
	add("transformer.ln_f.weight", C)
	addB("transformer.ln_f.bias", C)
	return ps
}

// conv1D reports whether our weight name is one HF stores as a Conv1D ([in, out]).
func conv1D(name string) bool {
	for _, s := range []string{".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"} {
		if len(name) > len(s) && name[len(name)-len(s):] == s {
			return true
		}
	}
	return false
}

// hfConfig is config.json of a GPT2LMHeadModel, as transformers writes it.
type hfConfig struct {
	ActivationFunction         string   `json:"activation_function"`
	Architectures              []string `json:"architectures"`
	AttnPdrop                  float64  `json:"attn_pdrop"`
	BOSTokenID                 *int     `json:"bos_token_id"`
	EmbdPdrop                  float64  `json:"embd_pdrop"`
	EOSTokenID                 *int     `json:"eos_token_id"`
	InitializerRange           float64  `json:"initializer_range"`
	LayerNormEpsilon           float64  `json:"layer_norm_epsilon"`
	ModelType                  string   `json:"model_type"`
	NCtx                       int      `json:"n_ctx"`
	NEmbd                      int      `json:"n_embd"`
	NHead                      int      `json:"n_head"`
	NInner                     *int     `json:"n_inner"`
	NLayer                     int      `json:"n_layer"`
	NPositions                 int      `json:"n_positions"`
	ReorderAndUpcastAttn       bool     `json:"reorder_and_upcast_attn"`
	ResidPdrop                 float64  `json:"resid_pdrop"`
	ScaleAttnByInverseLayerIdx bool     `json:"scale_attn_by_inverse_layer_idx"`
	ScaleAttnWeights           bool     `json:"scale_attn_weights"`
	TieWordEmbeddings          bool     `json:"tie_word_embeddings"`
	TorchDType                 string   `json:"torch_dtype"`
	UseCache                   bool     `json:"use_cache"`
	VocabSize                  int      `json:"vocab_size"`
	// Gptkit records what the HF format cannot say (set by Export; absent in hub files).
	Gptkit *gptkitExtra `json:"gptkit,omitempty"`
}

type gptkitExtra struct {
	Bias                 bool   `json:"bias"`
	PaddedVocab          int    `json:"padded_vocab"`
	Tokenizer            string `json:"tokenizer,omitempty"`
	TokenizerFingerprint string `json:"tokenizer_fingerprint,omitempty"`
	Note                 string `json:"note,omitempty"`
}

func toHF(c Config) hfConfig {
	h := hfConfig{
		ActivationFunction: "gelu_new", // tanh-approximated GELU, as our kernels
		Architectures:      []string{"GPT2LMHeadModel"},
		// The trainer drops after the embeddings and each branch, never the attention
		// probabilities (its flash attention has no dropout): attn_pdrop 0, so that
		// fine-tuning the export in transformers regularises as the training did.
		AttnPdrop: 0, EmbdPdrop: c.Dropout, ResidPdrop: c.Dropout,
		BOSTokenID: c.EOSTokenID, EOSTokenID: c.EOSTokenID,
		InitializerRange: 0.02,
		LayerNormEpsilon: c.eps(),
		ModelType:        "gpt2",
		NCtx:             c.BlockSize, NPositions: c.BlockSize,
		NEmbd: c.NEmbd, NHead: c.NHead, NLayer: c.NLayer,
		ScaleAttnWeights:  true,
		TieWordEmbeddings: true,
		TorchDType:        "float32",
		UseCache:          true,
		VocabSize:         c.VocabSize,
		Gptkit:            &gptkitExtra{Bias: c.Bias, PaddedVocab: c.PaddedVocab, Tokenizer: c.Tokenizer, TokenizerFingerprint: c.TokenizerFingerprint},
	}
	if !c.Bias {
		h.Gptkit.Note = "trained without biases: the bias tensors are zeros"
	}
	return h
}

// fromHF reads a config.json; unknown keys are fine (transformers writes many).
func fromHF(data []byte) (Config, *gptkitExtra, error) {
	h := hfConfig{ScaleAttnWeights: true, TieWordEmbeddings: true, ActivationFunction: "gelu_new", LayerNormEpsilon: 1e-5}
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, nil, fmt.Errorf("not a JSON config: %v", err)
	}
	if h.ModelType != "" && h.ModelType != "gpt2" {
		return Config{}, nil, fmt.Errorf("model_type %q, want gpt2", h.ModelType)
	}
	switch {
	case h.ActivationFunction != "gelu_new" && h.ActivationFunction != "gelu_pytorch_tanh" && h.ActivationFunction != "gelu_fast":
		return Config{}, nil, fmt.Errorf("activation_function %q: gptkit's GELU is the tanh approximation (gelu_new)", h.ActivationFunction)
	case h.NInner != nil && *h.NInner != 4*h.NEmbd:
		return Config{}, nil, fmt.Errorf("n_inner %d: gptkit's MLP is 4 x n_embd = %d wide", *h.NInner, 4*h.NEmbd)
	case !h.ScaleAttnWeights || h.ScaleAttnByInverseLayerIdx:
		return Config{}, nil, fmt.Errorf("attention scaling (scale_attn_weights %v, scale_attn_by_inverse_layer_idx %v) differs from GPT-2's 1/sqrt(head size)", h.ScaleAttnWeights, h.ScaleAttnByInverseLayerIdx)
	case !h.TieWordEmbeddings:
		return Config{}, nil, fmt.Errorf("tie_word_embeddings false: gptkit ties lm_head to wte")
	case math.Abs(h.LayerNormEpsilon-1e-5) > 1e-12:
		return Config{}, nil, fmt.Errorf("layer_norm_epsilon %g: gptkit's LayerNorm uses GPT-2's 1e-5", h.LayerNormEpsilon)
	}
	pos := h.NPositions
	if pos == 0 {
		pos = h.NCtx
	}
	c := Config{
		VocabSize: h.VocabSize, PaddedVocab: PadVocab(h.VocabSize),
		NLayer: h.NLayer, NHead: h.NHead, NEmbd: h.NEmbd, BlockSize: pos,
		Bias: true, LayerNormEps: h.LayerNormEpsilon, Dropout: h.ResidPdrop, EOSTokenID: h.EOSTokenID,
	}
	if h.Gptkit != nil {
		c.Tokenizer, c.TokenizerFingerprint = h.Gptkit.Tokenizer, h.Gptkit.TokenizerFingerprint
	}
	if err := c.check(); err != nil {
		return Config{}, nil, err
	}
	return c, h.Gptkit, nil
}
