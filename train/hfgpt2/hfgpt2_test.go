package hfgpt2

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"gptkit/internal/durable"
	"gptkit/train/safetensors"
)

// randomModel returns our tensors for cfg with N(0, 0.1)-ish values and zero padding
// rows in wte.
func randomModel(cfg Config, seed uint64) []safetensors.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	var ts []safetensors.Tensor
	for _, p := range Params(cfg) {
		t := safetensors.Tensor{Name: p.Name, Shape: p.Shape, Data: make([]float32, numel(p.Shape))}
		for i := range t.Data {
			t.Data[i] = float32(r.NormFloat64() * 0.1)
		}
		if strings.HasSuffix(p.Name, "ln_1.weight") || strings.HasSuffix(p.Name, "ln_2.weight") || strings.HasSuffix(p.Name, "ln_f.weight") {
			for i := range t.Data {
				t.Data[i] += 1
			}
		}
		if p.Name == "transformer.wte.weight" {
			clear(t.Data[cfg.VocabSize*cfg.NEmbd:])
		}
		ts = append(ts, t)
	}
	return ts
}

func TestExportImportRoundTrip(t *testing.T) {
	eos := 64
	for _, cfg := range []Config{
		{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 2, NEmbd: 8, BlockSize: 16, Bias: true, LayerNormEps: 1e-5, EOSTokenID: &eos},
		{VocabSize: 100, PaddedVocab: 128, NLayer: 3, NHead: 4, NEmbd: 16, BlockSize: 8, Bias: false, LayerNormEps: 1e-5},
	} {
		dir := t.TempDir()
		want := randomModel(cfg, 7)
		if err := Export(dir, cfg, want); err != nil {
			t.Fatal(err)
		}
		gotCfg, got, err := Import(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotCfg, cfg) {
			t.Fatalf("config %+v came back as %+v", cfg, gotCfg)
		}
		if len(got) != len(want) {
			t.Fatalf("%d tensors came back, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || !sameShape(got[i].Shape, want[i].Shape) || !sameBits(got[i].Data, want[i].Data) {
				t.Fatalf("tensor %d %s %v did not round-trip bit-exactly (got %s %v)", i, want[i].Name, want[i].Shape, got[i].Name, got[i].Shape)
			}
		}
	}
}

// TestExportLayout checks a one-layer, two-channel model value by value against the
// layout transformers' GPT2LMHeadModel loads: Conv1D weights [in, out], wte with
// vocab_size rows, no lm_head, metadata format=pt, and the config.json fields.
func TestExportLayout(t *testing.T) {
	cfg := Config{VocabSize: 3, PaddedVocab: 64, NLayer: 1, NHead: 1, NEmbd: 2, BlockSize: 4, Bias: true}
	ts := randomModel(cfg, 1)
	for i := range ts {
		if ts[i].Name == "transformer.h.0.attn.c_attn.weight" { // (3C, C) = (6, 2): row r = [2r, 2r+1]
			for j := range ts[i].Data {
				ts[i].Data[j] = float32(j)
			}
		}
	}
	dir := t.TempDir()
	if err := Export(dir, cfg, ts); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" {
		t.Fatalf("metadata %v lacks format=pt", f.Metadata)
	}
	var names []string
	for _, t := range f.Tensors {
		names = append(names, t.Name)
	}
	wantNames := []string{
		"transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.bias", "transformer.h.0.attn.c_proj.weight",
		"transformer.h.0.ln_1.bias", "transformer.h.0.ln_1.weight", "transformer.h.0.ln_2.bias", "transformer.h.0.ln_2.weight",
		"transformer.h.0.mlp.c_fc.bias", "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.bias", "transformer.h.0.mlp.c_proj.weight",
		"transformer.ln_f.bias", "transformer.ln_f.weight", "transformer.wpe.weight", "transformer.wte.weight",
	}
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("names %v\nwant %v", names, wantNames)
	}
	ca, _ := f.Tensor("transformer.h.0.attn.c_attn.weight")
	if !reflect.DeepEqual(ca.Shape, []int{2, 6}) || !reflect.DeepEqual(ca.Data, []float32{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}) {
		t.Fatalf("c_attn.weight %v %v, want [2 6] [0 2 4 6 8 10 1 3 5 7 9 11]", ca.Shape, ca.Data)
	}
	for name, shape := range map[string][]int{
		"transformer.wte.weight": {3, 2}, "transformer.wpe.weight": {4, 2}, "transformer.h.0.attn.c_proj.weight": {2, 2},
		"transformer.h.0.mlp.c_fc.weight": {2, 8}, "transformer.h.0.mlp.c_proj.weight": {8, 2}, "transformer.h.0.mlp.c_fc.bias": {8},
	} {
		if tt, _ := f.Tensor(name); !reflect.DeepEqual(tt.Shape, shape) {
			t.Errorf("%s shape %v, want %v", name, tt.Shape, shape)
		}
	}
	var cj map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, ConfigName))
	if err := json.Unmarshal(b, &cj); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"architectures": []any{"GPT2LMHeadModel"}, "model_type": "gpt2", "activation_function": "gelu_new",
		"vocab_size": 3.0, "n_positions": 4.0, "n_ctx": 4.0, "n_embd": 2.0, "n_layer": 1.0, "n_head": 1.0,
		"layer_norm_epsilon": 1e-5, "tie_word_embeddings": true, "n_inner": nil, "scale_attn_weights": true,
	} {
		if !reflect.DeepEqual(cj[k], v) {
			t.Errorf("config.json %s = %v, want %v", k, cj[k], v)
		}
	}
}

// TestImportHubStyle reads a file laid out as the hub's gpt2 model.safetensors: keys
// without "transformer.", the attn.bias causal-mask buffers, and a tied lm_head copy.
func TestImportHubStyle(t *testing.T) {
	cfg := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 2, NHead: 2, NEmbd: 4, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	want := randomModel(cfg, 3)
	if err := Export(dir, cfg, want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, WeightsName)
	f, _ := safetensors.ReadFile(path)
	var hub []safetensors.Tensor
	for _, tt := range f.Tensors {
		tt.Name = strings.TrimPrefix(tt.Name, "transformer.")
		hub = append(hub, tt)
		if tt.Name == "wte.weight" {
			hub = append(hub, safetensors.Tensor{Name: "lm_head.weight", Shape: tt.Shape, Data: tt.Data})
		}
	}
	// The causal-mask buffers, as older transformers saved them: uint8 and bool
	// (they once failed the whole import: only float dtypes convert).
	writeWithMasks(t, path, hub, []string{"U8", "BOOL"})
	// A hub config.json has no gptkit section and says nothing of n_inner.
	os.WriteFile(filepath.Join(dir, ConfigName), []byte(`{"activation_function":"gelu_new","architectures":["GPT2LMHeadModel"],
		"layer_norm_epsilon":1e-05,"model_type":"gpt2","n_ctx":8,"n_embd":4,"n_head":2,"n_layer":2,"n_positions":8,"vocab_size":50,
		"task_specific_params":{"text-generation":{"do_sample":true,"max_length":50}}}`), 0o666)
	gotCfg, got, err := Import(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotCfg, cfg) {
		t.Fatalf("config %+v, want %+v", gotCfg, cfg)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !sameBits(got[i].Data, want[i].Data) {
			t.Fatalf("tensor %s differs", want[i].Name)
		}
	}

	// An untied lm_head, an extra tensor, a missing tensor: errors naming them.
	for _, c := range []struct {
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want string
	}{
		{func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == "lm_head.weight" {
					ts[i].Data = make([]float32, len(ts[i].Data))
				}
			}
			return ts
		}, "untied"},
		{func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "h.2.ln_1.weight", Shape: []int{4}, Data: make([]float32, 4)})
		}, "unexpected tensors h.2.ln_1.weight"},
		{func(ts []safetensors.Tensor) []safetensors.Tensor { return ts[1:] }, "has no tensor transformer.h.0.attn.c_attn.bias"},
	} {
		edited := c.edit(append([]safetensors.Tensor(nil), hub...))
		if err := safetensors.WriteFile(path, edited, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Import(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
}

func TestImportRejectsOtherArchitectures(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{"model_type":"llama"}`, `model_type "llama"`},
		{`{"model_type":"gpt2","activation_function":"relu","n_embd":4,"n_head":1,"n_layer":1,"n_positions":4,"vocab_size":5}`, "activation_function"},
		{`{"model_type":"gpt2","n_inner":7,"n_embd":4,"n_head":1,"n_layer":1,"n_positions":4,"vocab_size":5}`, "n_inner 7"},
		{`{"model_type":"gpt2","scale_attn_by_inverse_layer_idx":true,"n_embd":4,"n_head":1,"n_layer":1,"n_positions":4,"vocab_size":5}`, "attention scaling"},
		{`{"model_type":"gpt2","tie_word_embeddings":false,"n_embd":4,"n_head":1,"n_layer":1,"n_positions":4,"vocab_size":5}`, "tie_word_embeddings"},
		{`{"model_type":"gpt2","layer_norm_epsilon":0.001,"n_embd":4,"n_head":1,"n_layer":1,"n_positions":4,"vocab_size":5}`, "layer_norm_epsilon 0.001"},
		{`{"model_type":"gpt2","n_embd":6,"n_head":4,"n_layer":1,"n_positions":4,"vocab_size":5}`, "do not divide"},
		{`[`, "not a JSON config"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigName), []byte(c.config), 0o666)
		if _, _, err := Import(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.config, err, c.want)
		}
	}
	if _, _, err := Import(t.TempDir()); err == nil || !strings.Contains(err.Error(), "want a Hugging Face model directory") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestExportRejects(t *testing.T) {
	cfg := Config{VocabSize: 3, PaddedVocab: 64, NLayer: 1, NHead: 1, NEmbd: 2, BlockSize: 4, Bias: true}
	ts := randomModel(cfg, 1)
	if err := Export(t.TempDir(), cfg, ts[1:]); err == nil || !strings.Contains(err.Error(), "transformer.wte.weight is missing") {
		t.Errorf("missing wte: %v", err)
	}
	bad := append([]safetensors.Tensor(nil), ts...)
	bad[1] = safetensors.Tensor{Name: bad[1].Name, Shape: []int{5, 2}, Data: make([]float32, 10)}
	if err := Export(t.TempDir(), cfg, bad); err == nil || !strings.Contains(err.Error(), "has shape [5 2]") {
		t.Errorf("bad wpe: %v", err)
	}
	noBias := cfg
	noBias.Bias = false
	if err := Export(t.TempDir(), noBias, ts); err == nil || !strings.Contains(err.Error(), "not part of a GPT-2 model") {
		t.Errorf("biases with Bias false: %v", err)
	}
}

// writeWithMasks writes tensors (F32) and an attn.bias causal-mask buffer per layer of
// the given dtypes (1 byte a value, 1×1×8×8) as a safetensors file, by hand: the
// package's writer writes F32 only.
func writeWithMasks(t *testing.T, path string, tensors []safetensors.Tensor, maskDTypes []string) {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, tt := range tensors {
		begin := len(data)
		for _, v := range tt.Data {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		header[tt.Name] = map[string]any{"dtype": "F32", "shape": tt.Shape, "data_offsets": []int{begin, len(data)}}
	}
	for i, dt := range maskDTypes {
		begin := len(data)
		for r := range 8 {
			for c := range 8 {
				if dt == "F32" { // (the hub's gpt2 file: float masks)
					data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(boolInt(c <= r))))
				} else {
					data = append(data, byte(boolInt(c <= r)))
				}
			}
		}
		header[fmt.Sprintf("h.%d.attn.bias", i)] = map[string]any{"dtype": dt, "shape": []int{1, 1, 8, 8}, "data_offsets": []int{begin, len(data)}}
	}
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(append(out, hj...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestExportFailsWhole: an export whose weights' write fails part way (a full disk)
// leaves the directory as it was, the earlier export's model.safetensors whole and no
// temporary file, where a plain create and write left part of the new file; and a good
// export syncs the directory after its renames.
func TestExportFailsWhole(t *testing.T) {
	cfg := Config{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 2, NEmbd: 8, BlockSize: 16, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	var synced []string
	defer func(f func(string) error) { durable.DirSync = f }(durable.DirSync)
	durable.DirSync = func(d string) error { synced = append(synced, d); return nil }
	if err := Export(dir, cfg, randomModel(cfg, 1)); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[0] != dir || synced[1] != dir {
		t.Errorf("an export synced the directories %q, want %s after each of its two files", synced, dir)
	}
	before, err := os.ReadFile(filepath.Join(dir, WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func(io.Writer, []safetensors.Layout, map[string]string, func(int, []float32) error) error) {
		writeSafetensors = f
	}(writeSafetensors)
	writeSafetensors = func(w io.Writer, ts []safetensors.Layout, meta map[string]string, fill func(int, []float32) error) error {
		w.Write([]byte("half of a header"))
		return errors.New("no space left on device")
	}
	err = Export(dir, cfg, randomModel(cfg, 2))
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), WeightsName) {
		t.Fatalf("the failed export said %v, want the write's error naming %s", err, WeightsName)
	}
	after, err := os.ReadFile(filepath.Join(dir, WeightsName))
	if err != nil || string(after) != string(before) {
		t.Fatalf("after a failed export %s is %d bytes (%v), want the earlier %d", WeightsName, len(after), err, len(before))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != WeightsName && e.Name() != ConfigName {
			t.Errorf("a failed export left %s", e.Name())
		}
	}
}

// oldExportWeights is model.safetensors as Export wrote it before it was written
// tensor by tensor (ExportFunc): every HF tensor made whole in memory (the Conv1D
// weights transposed into copies), then safetensors.Write. Kept for
// TestExportMatchesOlder.
func oldExportWeights(cfg Config, tensors []safetensors.Tensor) []byte {
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	var out []safetensors.Tensor
	for _, p := range Params(cfg) {
		t := byName[p.Name]
		switch {
		case p.Name == "transformer.wte.weight":
			t = safetensors.Tensor{Name: p.Name, Shape: []int{cfg.VocabSize, cfg.NEmbd}, Data: t.Data[:cfg.VocabSize*cfg.NEmbd]}
		case conv1D(p.Name):
			t = safetensors.Tensor{Name: p.Name, Shape: []int{p.Shape[1], p.Shape[0]}, Data: transpose(t.Data, p.Shape[0], p.Shape[1])}
		}
		out = append(out, t)
		if !cfg.Bias && strings.HasSuffix(p.Name, ".weight") && p.Name != "transformer.wte.weight" && p.Name != "transformer.wpe.weight" {
			n := p.Shape[0]
			out = append(out, safetensors.Tensor{Name: strings.TrimSuffix(p.Name, ".weight") + ".bias", Shape: []int{n}, Data: make([]float32, n)})
		}
	}
	meta := map[string]string{"format": "pt"}
	if !cfg.Bias {
		meta["gptkit_bias"] = "false"
	}
	var b bytes.Buffer
	if err := safetensors.Write(&b, out, meta); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// TestExportMatchesOlder: model.safetensors, now written tensor by tensor
// (ExportFunc: each Conv1D weight transposed through one buffer, the zero biases of a
// bias-free model through the file's reused one), is byte for byte the file of the
// whole tensors written at once; with and without biases, through Export and through
// ExportFunc reading our tensors by name.
func TestExportMatchesOlder(t *testing.T) {
	for _, cfg := range []Config{
		{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 2, NEmbd: 8, BlockSize: 16, Bias: true, LayerNormEps: 1e-5},
		{VocabSize: 100, PaddedVocab: 128, NLayer: 3, NHead: 4, NEmbd: 16, BlockSize: 8, Bias: false, LayerNormEps: 1e-5},
	} {
		ts := randomModel(cfg, 5)
		for i := range ts { // padding rows that are not zero: they must not be written
			if ts[i].Name == "transformer.wte.weight" {
				for j := cfg.VocabSize * cfg.NEmbd; j < len(ts[i].Data); j++ {
					ts[i].Data[j] = 7
				}
			}
		}
		want := oldExportWeights(cfg, ts)
		byName := map[string][]float32{}
		for _, tt := range ts {
			byName[tt.Name] = tt.Data
		}
		for _, how := range []string{"Export", "ExportFunc"} {
			dir := t.TempDir()
			var err error
			if how == "Export" {
				err = Export(dir, cfg, ts)
			} else {
				err = ExportFunc(dir, cfg, func(name string, dst []float32) error {
					if len(dst) > len(byName[name]) {
						t.Fatalf("%s asked for %d values of %s, which has %d", how, len(dst), name, len(byName[name]))
					}
					copy(dst, byName[name])
					return nil
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, WeightsName))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("bias %v, %s: %s is %d bytes, not the %d bytes of the whole-tensor export", cfg.Bias, how, WeightsName, len(got), len(want))
			}
		}
	}
}

// TestExportFuncReadFails: an error of ExportFunc's read comes back naming the
// weights' file, and leaves the earlier export as it was.
func TestExportFuncReadFails(t *testing.T) {
	cfg := Config{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 2, NEmbd: 8, BlockSize: 16, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	if err := Export(dir, cfg, randomModel(cfg, 1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, WeightsName))
	errRead := errors.New("device lost (test)")
	err := ExportFunc(dir, cfg, func(name string, dst []float32) error {
		if name == "transformer.h.1.mlp.c_fc.weight" {
			return errRead
		}
		return nil
	})
	if !errors.Is(err, errRead) || !strings.Contains(err.Error(), WeightsName) {
		t.Fatalf("ExportFunc with a failing read: %v, want its error naming %s", err, WeightsName)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, WeightsName)); !bytes.Equal(after, before) {
		t.Errorf("a failed export changed %s", WeightsName)
	}
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

// oldImport is Import as it was before ImportFunc: the whole file read, every tensor
// converted into a new one. Kept for TestImportMatchesOlder.
func oldImport(dir string) (Config, []safetensors.Tensor, error) {
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

// TestImportMatchesOlder: Import, now ReadConfig and ImportFunc reading tensor by
// tensor (safetensors.ReadInto, mask buffers of any dtype read past), gives the shape, tensors and errors the whole-file Import gave: an export
// with and without biases, a bias-free export whose biases are not zero, hub-style
// files with float or byte mask buffers and a tied lm_head, and an untied one.
func TestImportMatchesOlder(t *testing.T) {
	withBias := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 2, NHead: 2, NEmbd: 4, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	noBias := withBias
	noBias.Bias = false
	hubStyle := func(masks []string, untie bool) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := Export(dir, withBias, randomModel(withBias, 3)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, WeightsName)
			f, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var hub []safetensors.Tensor
			for _, tt := range f.Tensors {
				tt.Name = strings.TrimPrefix(tt.Name, "transformer.")
				hub = append(hub, tt)
				if tt.Name == "wte.weight" {
					lm := append([]float32(nil), tt.Data...)
					if untie {
						lm[len(lm)-1]++
					}
					hub = append(hub, safetensors.Tensor{Name: "lm_head.weight", Shape: tt.Shape, Data: lm})
				}
			}
			writeWithMasks(t, path, hub, masks)
		}
	}
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"export with biases", func(t *testing.T, dir string) {
			if err := Export(dir, withBias, randomModel(withBias, 1)); err != nil {
				t.Fatal(err)
			}
		}},
		{"export without biases", func(t *testing.T, dir string) {
			if err := Export(dir, noBias, randomModel(noBias, 2)); err != nil {
				t.Fatal(err)
			}
		}},
		{"bias-free export with a bias not zero", func(t *testing.T, dir string) {
			if err := Export(dir, noBias, randomModel(noBias, 2)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, WeightsName)
			f, _ := safetensors.ReadFile(path)
			for i := range f.Tensors {
				if f.Tensors[i].Name == "transformer.h.1.mlp.c_fc.bias" {
					f.Tensors[i].Data[3] = 0.5
				}
			}
			if err := safetensors.WriteFile(path, f.Tensors, f.Metadata); err != nil {
				t.Fatal(err)
			}
		}},
		{"hub, float masks", hubStyle([]string{"F32", "F32"}, false)},
		{"hub, byte masks", hubStyle([]string{"U8", "BOOL"}, false)},
		{"hub, untied lm_head", hubStyle([]string{"F32"}, true)},
		{"hub, untied lm_head, byte masks", hubStyle([]string{"U8"}, true)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.make(t, dir)
			wantCfg, want, wantErr := oldImport(dir)
			gotCfg, got, err := Import(dir)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if !reflect.DeepEqual(gotCfg, wantCfg) {
				t.Fatalf("config %+v, want %+v", gotCfg, wantCfg)
			}
			if len(got) != len(want) {
				t.Fatalf("%d tensors, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Name != want[i].Name || !sameShape(got[i].Shape, want[i].Shape) || !sameBits(got[i].Data, want[i].Data) {
					t.Fatalf("tensor %d: %s %v, want %s %v with the same values", i, got[i].Name, got[i].Shape, want[i].Name, want[i].Shape)
				}
			}
			if wantErr == nil {
				if cfg, err := ReadConfig(dir); err != nil || !reflect.DeepEqual(cfg, wantCfg) {
					t.Errorf("ReadConfig: %+v (%v), want %+v", cfg, err, wantCfg)
				}
			}
		})
	}
}

// TestImportFuncErrors: put's error comes back as it is, at once; a config that is
// not the directory's (replaced since ReadConfig) is refused before any put.
func TestImportFuncErrors(t *testing.T) {
	cfg := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 2, NHead: 2, NEmbd: 4, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	if err := Export(dir, cfg, randomModel(cfg, 1)); err != nil {
		t.Fatal(err)
	}
	errFull := errors.New("out of device memory (test)")
	puts := 0
	err := ImportFunc(dir, cfg, func(string, []float32) error { puts++; return errFull })
	if err != errFull || puts != 1 {
		t.Errorf("a failing put: %v after %d puts, want its error after 1", err, puts)
	}
	other := cfg
	other.NLayer = 3
	puts = 0
	err = ImportFunc(dir, other, func(string, []float32) error { puts++; return nil })
	if err == nil || !strings.Contains(err.Error(), "replaced") || puts != 0 {
		t.Errorf("another config: %v after %d puts, want a refusal before any", err, puts)
	}
}

// TestImportFuncStreamsByteMasks: a file whose mask buffers are uint8 and bool, as
// older transformers saved them, is streamed tensor by tensor like any other (it was
// read whole first, all its weights in memory at once).
func TestImportFuncStreamsByteMasks(t *testing.T) {
	cfg := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 8, NHead: 2, NEmbd: 64, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	if err := Export(dir, cfg, randomModel(cfg, 5)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, WeightsName)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	weights := 0
	for _, tt := range f.Tensors {
		weights += 4 * len(tt.Data)
	}
	writeWithMasks(t, path, f.Tensors, []string{"U8", "BOOL"})
	f = nil
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	err = ImportFunc(dir, got, func(string, []float32) error { n++; return nil })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Params(cfg)); n != want {
		t.Fatalf("put called %d times, want %d", n, want)
	}
	allocated := int(after.TotalAlloc - before.TotalAlloc)
	t.Logf("weights %d KB, allocated %d KB", weights>>10, allocated>>10)
	if allocated > weights/2 {
		t.Errorf("ImportFunc allocated %d KB for %d KB of weights: read whole, not streamed", allocated>>10, weights>>10)
	}
}

// TestImportFuncFileChanged: model.safetensors replaced or rewritten while ImportFunc
// reads it, by a file of the same size whose header gives tensors other shapes (here
// c_fc.weight 8 values shorter, c_fc.bias 8 longer), made it index past the end of
// a tensor's values (a panic) or put values of the wrong shape. Now the file read is
// the one whose header was read (one open: a file renamed over it, as an export
// replaces it, changes nothing), and a tensor whose shape is not the one its header
// gave when read (the file rewritten in place) is an error naming it.
func TestImportFuncFileChanged(t *testing.T) {
	cfg := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 1, NHead: 2, NEmbd: 8, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	want := randomModel(cfg, 3)
	for _, replace := range []string{"renamed", "rewritten"} {
		t.Run(replace, func(t *testing.T) {
			dir := t.TempDir()
			if err := Export(dir, cfg, want); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, WeightsName)
			f, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range f.Tensors {
				tt := &f.Tensors[i]
				switch tt.Name {
				case "transformer.h.0.mlp.c_fc.weight":
					tt.Shape, tt.Data = []int{8, 31}, tt.Data[:8*31]
				case "transformer.h.0.mlp.c_fc.bias":
					tt.Shape, tt.Data = []int{40}, append(tt.Data, make([]float32, 8)...)
				}
			}
			var changed bytes.Buffer
			if err := safetensors.Write(&changed, f.Tensors, map[string]string{"format": "pt"}); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != int64(changed.Len()) {
				t.Fatalf("the changed file has %d bytes, the file %v: the test needs the same size", changed.Len(), fi.Size())
			}
			got, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func(p func(string)) { planned = p }(planned)
			planned = func(string) {
				if replace == "renamed" {
					err = durable.WriteFile(path, changed.Bytes(), 0o644)
				} else {
					err = os.WriteFile(path, changed.Bytes(), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			byName := map[string][]float32{}
			err = ImportFunc(dir, got, func(name string, vals []float32) error {
				byName[name] = append([]float32(nil), vals...)
				return nil
			})
			if replace == "rewritten" {
				if err == nil || !strings.Contains(err.Error(), "h.0.mlp.c_f") || !strings.Contains(err.Error(), WeightsName) {
					t.Fatalf("a file rewritten while read: %v, want an error naming the tensor and the file", err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !sameBits(byName[w.Name], w.Data) {
					t.Errorf("%s: not the values of the file whose header was read", w.Name)
				}
			}
		})
	}
}

// TestOpenDirImport: a directory opened once (OpenDir) gives ReadConfig's shape and,
// its config.json and header not read again, ImportFunc's tensors, from the file
// whose header it read: another model renamed over it, as an export replaces one,
// and config.json removed, change nothing.
func TestOpenDirImport(t *testing.T) {
	cfg := Config{VocabSize: 50, PaddedVocab: 64, NLayer: 2, NHead: 2, NEmbd: 4, BlockSize: 8, Bias: true, LayerNormEps: 1e-5}
	dir := t.TempDir()
	want := randomModel(cfg, 1)
	if err := Export(dir, cfg, want); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := ReadConfig(dir); err != nil || !reflect.DeepEqual(d.Config(), got) {
		t.Fatalf("OpenDir's config %+v, ReadConfig's %+v (%v)", d.Config(), got, err)
	}
	other := t.TempDir()
	if err := Export(other, cfg, randomModel(cfg, 2)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, WeightsName), filepath.Join(dir, WeightsName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ConfigName)); err != nil {
		t.Fatal(err)
	}
	byName := map[string][]float32{}
	if err := d.Import(func(name string, vals []float32) error {
		byName[name] = append([]float32(nil), vals...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(byName) != len(want) {
		t.Fatalf("%d tensors, want %d", len(byName), len(want))
	}
	for _, w := range want {
		if !sameBits(byName[w.Name], w.Data) {
			t.Errorf("%s: not the values of the file whose header was read", w.Name)
		}
	}
}

// TestExportAttnPdropZero: the trainer never drops the attention probabilities, so the
// export's attn_pdrop is 0 whatever dropout was (it was dropout: fine-tuning the export
// in transformers added an attention dropout the model never trained with); embd_pdrop
// and resid_pdrop are dropout, and an import reads dropout back from resid_pdrop.
func TestExportAttnPdropZero(t *testing.T) {
	h := toHF(Config{NLayer: 1, NHead: 1, NEmbd: 8, BlockSize: 4, VocabSize: 10, Dropout: 0.1})
	if h.AttnPdrop != 0 || h.EmbdPdrop != 0.1 || h.ResidPdrop != 0.1 {
		t.Fatalf("attn_pdrop %v, embd_pdrop %v, resid_pdrop %v; want 0, 0.1, 0.1", h.AttnPdrop, h.EmbdPdrop, h.ResidPdrop)
	}
}
