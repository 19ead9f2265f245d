package hfgpt2

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/sharedtest"
	"gptkit/train/safetensors"
)

// torchPython returns a python3 that imports torch, or "".
func torchPython() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import torch").Run() == nil {
			return path
		}
	}
	return ""
}

// TestExportMatchesTorchForward exports a small random model, runs a GPT-2 forward pass
// over it in PyTorch written for the Hugging Face layout (tools/hf_gpt2_forward.py), and
// compares the logits with a forward pass written here for our layout. A transposed or
// misnamed weight changes the logits by O(1); both sides compute in float64.
func TestExportMatchesTorchForward(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	py := torchPython()
	if py == "" {
		sharedtest.Missing(t, "python3 with torch (Debian python3-torch)")
	}
	for _, cfg := range []Config{
		{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 4, NEmbd: 16, BlockSize: 12, Bias: true, LayerNormEps: 1e-5},
		{VocabSize: 30, PaddedVocab: 64, NLayer: 1, NHead: 2, NEmbd: 8, BlockSize: 6, Bias: false, LayerNormEps: 1e-5},
	} {
		t.Run(fmt.Sprintf("bias=%v", cfg.Bias), func(t *testing.T) {
			ts := randomModel(cfg, 11)
			// Non-zero padding rows must not leak into the HF file.
			for i := range ts[0].Data[cfg.VocabSize*cfg.NEmbd:] {
				ts[0].Data[cfg.VocabSize*cfg.NEmbd+i] = 100
			}
			dir := t.TempDir()
			if err := Export(dir, cfg, ts); err != nil {
				t.Fatal(err)
			}
			tokens := []int{0, 5, cfg.VocabSize - 1, 3, 3, 1}
			tj, _ := json.Marshal(tokens)
			out, err := exec.Command(py, filepath.Join("..", "..", "tools", "hf_gpt2_forward.py"), dir, string(tj)).Output()
			if err != nil {
				t.Fatalf("hf_gpt2_forward.py: %v\n%s", err, stderrOf(err))
			}
			var got struct{ Logits [][]float64 }
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			want := refForward(cfg, ts, tokens)
			if len(got.Logits) != len(want) {
				t.Fatalf("torch gave %d rows, want %d", len(got.Logits), len(want))
			}
			var worst float64
			for i := range want {
				if len(got.Logits[i]) != cfg.VocabSize {
					t.Fatalf("row %d: torch gave %d logits, want %d", i, len(got.Logits[i]), cfg.VocabSize)
				}
				for j := range want[i] {
					worst = math.Max(worst, math.Abs(got.Logits[i][j]-want[i][j]))
				}
			}
			if worst > 1e-9 {
				t.Fatalf("torch and Go logits differ by up to %g", worst)
			}
		})
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// refForward is a plain float64 GPT-2 forward over our layout (nn.Linear [out, in]);
// it returns the logits over the first VocabSize tokens.
func refForward(cfg Config, ts []safetensors.Tensor, tokens []int) [][]float64 {
	w := map[string][]float32{}
	for _, t := range ts {
		w[t.Name] = t.Data
	}
	C, T, H := cfg.NEmbd, len(tokens), cfg.NHead
	hs := C / H
	vec := func(name string, i, n int) []float64 { // row i of length n
		v := make([]float64, n)
		for k := range v {
			v[k] = float64(w[name][i*n+k])
		}
		return v
	}
	layerNorm := func(x []float64, p string) []float64 {
		var mean, vr float64
		for _, v := range x {
			mean += v
		}
		mean /= float64(len(x))
		for _, v := range x {
			vr += (v - mean) * (v - mean)
		}
		rstd := 1 / math.Sqrt(vr/float64(len(x))+cfg.eps())
		out := make([]float64, len(x))
		for i := range x {
			out[i] = (x[i] - mean) * rstd * float64(w[p+".weight"][i])
			if cfg.Bias {
				out[i] += float64(w[p+".bias"][i])
			}
		}
		return out
	}
	linear := func(x []float64, p string, outN int) []float64 {
		out := make([]float64, outN)
		for o := range out {
			row := vec(p+".weight", o, len(x))
			for i := range x {
				out[o] += row[i] * x[i]
			}
			if cfg.Bias {
				out[o] += float64(w[p+".bias"][o])
			}
		}
		return out
	}
	x := make([][]float64, T)
	for t, tok := range tokens {
		e, p := vec("transformer.wte.weight", tok, C), vec("transformer.wpe.weight", t, C)
		for i := range e {
			e[i] += p[i]
		}
		x[t] = e
	}
	for l := range cfg.NLayer {
		p := fmt.Sprintf("transformer.h.%d.", l)
		qkv := make([][]float64, T)
		for t := range T {
			qkv[t] = linear(layerNorm(x[t], p+"ln_1"), p+"attn.c_attn", 3*C)
		}
		for t := range T {
			y := make([]float64, C)
			for h := range H {
				scores := make([]float64, t+1)
				maxS := math.Inf(-1)
				for s := 0; s <= t; s++ {
					for k := range hs {
						scores[s] += qkv[t][h*hs+k] * qkv[s][C+h*hs+k]
					}
					scores[s] /= math.Sqrt(float64(hs))
					maxS = math.Max(maxS, scores[s])
				}
				var sum float64
				for s := range scores {
					scores[s] = math.Exp(scores[s] - maxS)
					sum += scores[s]
				}
				for s := range scores {
					for k := range hs {
						y[h*hs+k] += scores[s] / sum * qkv[s][2*C+h*hs+k]
					}
				}
			}
			proj := linear(y, p+"attn.c_proj", C)
			for i := range proj {
				x[t][i] += proj[i]
			}
		}
		for t := range T {
			hdn := linear(layerNorm(x[t], p+"ln_2"), p+"mlp.c_fc", 4*C)
			for i, v := range hdn {
				hdn[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
			}
			proj := linear(hdn, p+"mlp.c_proj", C)
			for i := range proj {
				x[t][i] += proj[i]
			}
		}
	}
	logits := make([][]float64, T)
	for t := range T {
		f := layerNorm(x[t], "transformer.ln_f")
		logits[t] = make([]float64, cfg.VocabSize)
		for v := range cfg.VocabSize {
			row := vec("transformer.wte.weight", v, C)
			for i := range f {
				logits[t][v] += row[i] * f[i]
			}
		}
	}
	return logits
}
