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
var writeSafetensors = safetensors.WriteFunc

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
// whole or not at all (durable.WriteFunc). The tensors must be exactly Params(cfg).
func Export(dir string, cfg Config, tensors []safetensors.Tensor) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	want := map[string]bool{}
	for _, p := range Params(cfg) {
		want[p.Name] = true
		t, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("hfgpt2: export: tensor %s is missing (the model config %+v needs it)", p.Name, cfg)
		}
		if !sameShape(t.Shape, p.Shape) || len(t.Data) != numel(p.Shape) {
			return fmt.Errorf("hfgpt2: export: tensor %s has shape %v (%d values), the config needs %v", p.Name, t.Shape, len(t.Data), p.Shape)
		}
	}
	for _, t := range tensors {
		if !want[t.Name] {
			return fmt.Errorf("hfgpt2: export: tensor %s is not part of a GPT-2 model with config %+v (bias %v)", t.Name, cfg, cfg.Bias)
		}
	}
	return ExportFunc(dir, cfg, func(name string, dst []float32) error {
		copy(dst, byName[name].Data)
		return nil
	})
}

// ExportFunc is Export without holding the tensors: it writes model.safetensors
// tensor by tensor, in the file's order, asking read for the values of each of our
// tensors (Params(cfg): our names, our layout) as it comes to it: read fills dst with
// the first len(dst) values of the tensor name (all of them, but wte's first
// VocabSize rows). dst is only valid during the call. Beside the file's one buffer of
// its largest tensor (safetensors.WriteFunc's), a Conv1D weight passes through a
// second, its transpose: the weights are never all in memory at once (a 1.5B model's
// export held 2 to 3 copies of them, 12-18 GB). An error of read is returned wrapped,
// and leaves the earlier model.safetensors, if any, as it was.
func ExportFunc(dir string, cfg Config, read func(name string, dst []float32) error) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	// The HF file's tensors, and how each is filled from ours.
	var (
		layouts []safetensors.Layout
		fills   []func(dst []float32) error
		scratch []float32 // a Conv1D weight in our layout, made at the first
		largest int       // Conv1D weight's elements
	)
	for _, p := range Params(cfg) {
		name := p.Name
		switch {
		case name == "transformer.wte.weight":
			layouts = append(layouts, safetensors.Layout{Name: name, Shape: []int{cfg.VocabSize, cfg.NEmbd}})
			fills = append(fills, func(dst []float32) error { return read(name, dst) })
		case conv1D(name):
			rows, cols := p.Shape[0], p.Shape[1]
			largest = max(largest, rows*cols)
			layouts = append(layouts, safetensors.Layout{Name: name, Shape: []int{cols, rows}})
			fills = append(fills, func(dst []float32) error {
				if scratch == nil {
					scratch = make([]float32, largest)
				}
				ours := scratch[:rows*cols]
				if err := read(name, ours); err != nil {
					return err
				}
				transposeInto(dst, ours, rows, cols)
				return nil
			})
		default:
			layouts = append(layouts, safetensors.Layout{Name: name, Shape: p.Shape})
			fills = append(fills, func(dst []float32) error { return read(name, dst) })
		}
		if !cfg.Bias && strings.HasSuffix(name, ".weight") && name != "transformer.wte.weight" && name != "transformer.wpe.weight" {
			n := p.Shape[0] // a linear layer's out or a LayerNorm's C
			layouts = append(layouts, safetensors.Layout{Name: strings.TrimSuffix(name, ".weight") + ".bias", Shape: []int{n}})
			fills = append(fills, func(dst []float32) error { clear(dst); return nil }) // (dst is a reused buffer)
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
	err := durable.WriteFunc(weights, 0o644, func(w io.Writer) error {
		return writeSafetensors(w, layouts, meta, func(i int, dst []float32) error { return fills[i](dst) })
	})
	if err != nil {
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
	transposeInto(t, m, rows, cols)
	return t
}

// transposeInto sets t to the (cols, rows) transpose of the (rows, cols) matrix m.
func transposeInto(t, m []float32, rows, cols int) {
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = m[r*cols+c]
		}
	}
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
