package hfgpt2

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gptkit/train/safetensors"
)

// Import reads a Hugging Face GPT-2 directory (config.json and model.safetensors, as
// save_pretrained writes or the hub serves them) into our names and layout, in Params
// order. It accepts keys with or without the "transformer." prefix, F32, F16 or BF16
// weights, and ignores the attn.bias / attn.masked_bias buffers of older files; an
// lm_head.weight must equal wte (tied). wte gets zero rows up to a multiple of 64. A
// directory Export wrote for a bias-free model comes back bias-free.
func Import(dir string) (Config, []safetensors.Tensor, error) {
	fail := func(err error) (Config, []safetensors.Tensor, error) {
		return Config{}, nil, fmt.Errorf("hfgpt2: import %s: %w", dir, err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		return fail(fmt.Errorf("%w (want a Hugging Face model directory with %s and %s)", err, ConfigName, WeightsName))
	}
	cfg, extra, err := fromHF(cj)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", ConfigName, err))
	}
	// The mask buffers are skipped before any conversion: older transformers saved
	// them as uint8 or bool, which no float conversion takes.
	f, err := safetensors.ReadFileExcept(filepath.Join(dir, WeightsName), isMaskBuffer)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, WeightsName+".index.json")); serr == nil {
			err = fmt.Errorf("%s holds a sharded checkpoint (%s.index.json and its model-NNNNN-of-NNNNN.safetensors files), which is not read here: save it as one file (transformers: save_pretrained(dir, max_shard_size=\"100GB\"))", dir, WeightsName)
		}
		return fail(err)
	}

	hf := map[string]*safetensors.Tensor{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := t.Name
		if !strings.HasPrefix(name, "transformer.") && name != "lm_head.weight" {
			name = "transformer." + name
		}
		if isMaskBuffer(name) {
			continue // causal-mask buffers, not parameters
		}
		if hf[name] != nil {
			return fail(fmt.Errorf("%s: tensor %s appears with and without the transformer. prefix", WeightsName, t.Name))
		}
		hf[name] = t
	}

	full := cfg // with biases: what the HF file must hold
	full.Bias = true
	var out []safetensors.Tensor
	for _, p := range Params(full) {
		t := hf[p.Name]
		if t == nil {
			return fail(fmt.Errorf("%s has no tensor %s (nor without the transformer. prefix)", WeightsName, p.Name))
		}
		delete(hf, p.Name)
		hfShape := p.Shape
		switch {
		case p.Name == "transformer.wte.weight":
			hfShape = []int{cfg.VocabSize, cfg.NEmbd}
		case conv1D(p.Name):
			hfShape = []int{p.Shape[1], p.Shape[0]}
		}
		if !sameShape(t.Shape, hfShape) {
			return fail(fmt.Errorf("%s: tensor %s has shape %v, %s implies %v", WeightsName, t.Name, t.Shape, ConfigName, hfShape))
		}
		data := t.Data
		switch {
		case p.Name == "transformer.wte.weight":
			data = make([]float32, cfg.PaddedVocab*cfg.NEmbd)
			copy(data, t.Data)
		case conv1D(p.Name):
			data = transpose(t.Data, hfShape[0], hfShape[1])
		}
		out = append(out, safetensors.Tensor{Name: p.Name, Shape: p.Shape, Data: data})
	}
	if lm := hf["lm_head.weight"]; lm != nil {
		delete(hf, "lm_head.weight")
		wte := out[0].Data[:cfg.VocabSize*cfg.NEmbd]
		if !sameShape(lm.Shape, []int{cfg.VocabSize, cfg.NEmbd}) || !sameBits(lm.Data, wte) {
			return fail(fmt.Errorf("%s: lm_head.weight differs from wte: an untied output layer, which gptkit (tied, as GPT-2) cannot represent", WeightsName))
		}
	}
	if len(hf) > 0 {
		var extraNames []string
		for _, t := range hf {
			extraNames = append(extraNames, t.Name)
		}
		sort.Strings(extraNames)
		return fail(fmt.Errorf("%s: unexpected tensors %s (not part of a GPT2LMHeadModel with %d layers)", WeightsName, strings.Join(extraNames, ", "), cfg.NLayer))
	}

	// A bias-free model Export wrote: drop the zero biases again.
	if extra != nil && !extra.Bias {
		allZero := true
		for _, t := range out {
			if strings.HasSuffix(t.Name, ".bias") {
				for _, x := range t.Data {
					allZero = allZero && x == 0
				}
			}
		}
		if allZero {
			cfg.Bias = false
			kept := out[:0]
			for _, t := range out {
				if !strings.HasSuffix(t.Name, ".bias") {
					kept = append(kept, t)
				}
			}
			out = kept
		}
	}
	return cfg, out, nil
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// isMaskBuffer reports whether a tensor name is one of GPT-2's causal-mask buffers
// (attn.bias, attn.masked_bias), which are not parameters.
func isMaskBuffer(name string) bool {
	return strings.HasSuffix(name, ".attn.bias") || strings.HasSuffix(name, ".attn.masked_bias")
}
