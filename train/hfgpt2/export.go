package hfgpt2

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gptkit/internal/durable"
	"gptkit/train/safetensors"
)

// writeSafetensors writes the weights' file (a variable: tests make it fail).
var writeSafetensors = safetensors.Write

// File names of a Hugging Face model directory.
const (
	WeightsName = "model.safetensors"
	ConfigName  = "config.json"
)

// Export writes dir/model.safetensors and dir/config.json for GPT2LMHeadModel from our
// tensors (see the package comment for names and shapes): HF names with the
// "transformer." prefix (as save_pretrained writes them), Conv1D weights transposed to
// [in, out], wte cut to VocabSize rows, no lm_head (tied), metadata {"format": "pt"}
// (from_pretrained requires it). Without biases (cfg.Bias false) the HF file gets zero
// biases and config.json says so. dir is created if missing; files are replaced, each
// whole or not at all (durable.WriteFunc).
func Export(dir string, cfg Config, tensors []safetensors.Tensor) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	params := Params(cfg)
	want := map[string]bool{}
	var out []safetensors.Tensor
	for _, p := range params {
		want[p.Name] = true
		t, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("hfgpt2: export: tensor %s is missing (the model config %+v needs it)", p.Name, cfg)
		}
		if !sameShape(t.Shape, p.Shape) || len(t.Data) != numel(p.Shape) {
			return fmt.Errorf("hfgpt2: export: tensor %s has shape %v (%d values), the config needs %v", p.Name, t.Shape, len(t.Data), p.Shape)
		}
		switch {
		case p.Name == "transformer.wte.weight":
			t = safetensors.Tensor{Name: p.Name, Shape: []int{cfg.VocabSize, cfg.NEmbd}, Data: t.Data[:cfg.VocabSize*cfg.NEmbd]}
		case conv1D(p.Name):
			t = safetensors.Tensor{Name: p.Name, Shape: []int{p.Shape[1], p.Shape[0]}, Data: transpose(t.Data, p.Shape[0], p.Shape[1])}
		}
		out = append(out, t)
		if !cfg.Bias && strings.HasSuffix(p.Name, ".weight") && p.Name != "transformer.wte.weight" && p.Name != "transformer.wpe.weight" {
			n := p.Shape[0] // a linear layer's out or a LayerNorm's C
			out = append(out, safetensors.Tensor{Name: strings.TrimSuffix(p.Name, ".weight") + ".bias", Shape: []int{n}, Data: make([]float32, n)})
		}
	}
	for _, t := range tensors {
		if !want[t.Name] {
			return fmt.Errorf("hfgpt2: export: tensor %s is not part of a GPT-2 model with config %+v (bias %v)", t.Name, cfg, cfg.Bias)
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("hfgpt2: export: %w", err)
	}
	meta := map[string]string{"format": "pt"}
	if !cfg.Bias {
		meta["gptkit_bias"] = "false"
	}
	// Each file through a temporary one renamed over it once whole and synced: a
	// failed or interrupted export leaves no file cut short (a plain create and write
	// left part of model.safetensors, which loaders refuse as corrupt).
	weights := filepath.Join(dir, WeightsName)
	if err := durable.WriteFunc(weights, 0o644, func(w io.Writer) error { return writeSafetensors(w, out, meta) }); err != nil {
		return fmt.Errorf("hfgpt2: export %s: %w", weights, err)
	}
	cj, err := json.MarshalIndent(toHF(cfg), "", "  ")
	if err != nil {
		return fmt.Errorf("hfgpt2: export: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, ConfigName), append(cj, '\n'), 0o644); err != nil {
		return fmt.Errorf("hfgpt2: export: %w", err)
	}
	return nil
}

// transpose returns the (cols, rows) transpose of the (rows, cols) matrix m.
func transpose(m []float32, rows, cols int) []float32 {
	t := make([]float32, len(m))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = m[r*cols+c]
		}
	}
	return t
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
