package train

import (
	"fmt"
	"strconv"

	"gptkit/kernels"
)

// ModelConfig is the shape of a GPT: what a checkpoint must agree on to be loaded.
type ModelConfig struct {
	VocabSize   int  `json:"vocab_size"`   // V: ids the tokenizer makes
	PaddedVocab int  `json:"padded_vocab"` // Vp: rows of wte, V rounded up to a multiple of 64
	NLayer      int  `json:"n_layer"`
	NHead       int  `json:"n_head"`
	NEmbd       int  `json:"n_embd"`
	BlockSize   int  `json:"block_size"`
	Bias        bool `json:"bias"`
}

// Validate checks the shape.
func (mc ModelConfig) Validate() error {
	switch {
	case mc.VocabSize < 1:
		return fmt.Errorf("train: vocab size %d < 1", mc.VocabSize)
	case mc.PaddedVocab < mc.VocabSize:
		return fmt.Errorf("train: padded vocab %d < vocab size %d", mc.PaddedVocab, mc.VocabSize)
	case mc.NLayer < 1 || mc.NHead < 1 || mc.NEmbd < 1 || mc.BlockSize < 1:
		return fmt.Errorf("train: bad model shape: n_layer %d, n_head %d, n_embd %d, block_size %d (all must be >= 1)", mc.NLayer, mc.NHead, mc.NEmbd, mc.BlockSize)
	case mc.NEmbd%mc.NHead != 0:
		return fmt.Errorf("train: n_embd %d is not a multiple of n_head %d", mc.NEmbd, mc.NHead)
	}
	return nil
}

// String is the shape in one line, for messages.
func (mc ModelConfig) String() string {
	return fmt.Sprintf("n_layer %d, n_head %d, n_embd %d, block_size %d, vocab %d (padded %d), bias %t",
		mc.NLayer, mc.NHead, mc.NEmbd, mc.BlockSize, mc.VocabSize, mc.PaddedVocab, mc.Bias)
}

// Model returns the shape cfg asks for with a vocabulary of vocab ids.
func (c *Config) Model(vocab int) ModelConfig {
	return ModelConfig{VocabSize: vocab, PaddedVocab: PaddedVocab(vocab), NLayer: c.NLayer, NHead: c.NHead,
		NEmbd: c.NEmbd, BlockSize: c.BlockSize, Bias: c.Bias}
}

// TensorInfo is one named parameter tensor inside the flat buffer.
type TensorInfo struct {
	Name   string // nanoGPT's state_dict name, e.g. transformer.h.0.attn.c_attn.weight
	Shape  []int  // nn.Linear layout [out, in]
	Offset int    // first element in the flat buffer
	Size   int    // elements
	Decay  bool   // in the weight-decay region
}

// align is the element alignment of every tensor in the flat buffer (64 bytes).
const align = 16

// Layout places the parameters of mc in a flat buffer: the weight-decay region
// [0, decayLen) first, the rest [decayLen, total) after it. Tensors start on
// 64-byte boundaries; the gaps stay zero (and zero stays zero under AdamW).
func (mc ModelConfig) Layout() (tensors []TensorInfo, decayLen, total int) {
	C, L := mc.NEmbd, mc.NLayer
	off := 0
	add := func(name string, decay bool, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		tensors = append(tensors, TensorInfo{Name: name, Shape: shape, Offset: off, Size: n, Decay: decay})
		off += (n + align - 1) / align * align
	}
	h := func(l int, rest string) string { return "transformer.h." + strconv.Itoa(l) + "." + rest }
	add("transformer.wte.weight", true, mc.PaddedVocab, C)
	add("transformer.wpe.weight", true, mc.BlockSize, C)
	for l := range L {
		add(h(l, "attn.c_attn.weight"), true, 3*C, C)
		add(h(l, "attn.c_proj.weight"), true, C, C)
		add(h(l, "mlp.c_fc.weight"), true, 4*C, C)
		add(h(l, "mlp.c_proj.weight"), true, C, 4*C)
	}
	decayLen = off
	for l := range L {
		add(h(l, "ln_1.weight"), false, C)
		if mc.Bias {
			add(h(l, "ln_1.bias"), false, C)
			add(h(l, "attn.c_attn.bias"), false, 3*C)
			add(h(l, "attn.c_proj.bias"), false, C)
		}
		add(h(l, "ln_2.weight"), false, C)
		if mc.Bias {
			add(h(l, "ln_2.bias"), false, C)
			add(h(l, "mlp.c_fc.bias"), false, 4*C)
			add(h(l, "mlp.c_proj.bias"), false, C)
		}
	}
	add("transformer.ln_f.weight", false, C)
	if mc.Bias {
		add("transformer.ln_f.bias", false, C)
	}
	return tensors, decayLen, off
}

// NumParams counts the parameters (the padded embedding rows included, as nanoGPT
// counts its 50304 rows).
func (mc ModelConfig) NumParams() int {
	tensors, _, _ := mc.Layout()
	n := 0
	for _, t := range tensors {
		n += t.Size
	}
	return n
}

// weights are named views of one flat buffer laid out by Layout (parameters,
// gradients or an AdamW moment). Biases are none without Bias.
type weights struct {
	wte, wpe, lnfW, lnfB kernels.Tensor
	layers               []layerWeights
}

type layerWeights struct {
	ln1W, ln1B, qkvW, qkvB, attnProjW, attnProjB kernels.Tensor
	ln2W, ln2B, fcW, fcB, fcProjW, fcProjB       kernels.Tensor
}

// views cuts buf into the tensors of the layout.
func views(mc ModelConfig, tensors []TensorInfo, buf kernels.Tensor) weights {
	byName := make(map[string]kernels.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = buf.Slice(t.Offset, t.Offset+t.Size)
	}
	w := weights{wte: byName["transformer.wte.weight"], wpe: byName["transformer.wpe.weight"],
		lnfW: byName["transformer.ln_f.weight"], lnfB: byName["transformer.ln_f.bias"]}
	for l := range mc.NLayer {
		p := "transformer.h." + strconv.Itoa(l) + "."
		w.layers = append(w.layers, layerWeights{
			ln1W: byName[p+"ln_1.weight"], ln1B: byName[p+"ln_1.bias"],
			qkvW: byName[p+"attn.c_attn.weight"], qkvB: byName[p+"attn.c_attn.bias"],
			attnProjW: byName[p+"attn.c_proj.weight"], attnProjB: byName[p+"attn.c_proj.bias"],
			ln2W: byName[p+"ln_2.weight"], ln2B: byName[p+"ln_2.bias"],
			fcW: byName[p+"mlp.c_fc.weight"], fcB: byName[p+"mlp.c_fc.bias"],
			fcProjW: byName[p+"mlp.c_proj.weight"], fcProjB: byName[p+"mlp.c_proj.bias"],
		})
	}
	return w
}
