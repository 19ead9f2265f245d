package hfgpt2

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
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
// directory Export wrote for a bias-free model comes back bias-free. It holds all the
// tensors: ReadConfig and ImportFunc read the same without them.
func Import(dir string) (Config, []safetensors.Tensor, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return Config{}, nil, err
	}
	shapes := map[string][]int{}
	for _, p := range Params(cfg) {
		shapes[p.Name] = p.Shape
	}
	var out []safetensors.Tensor
	err = ImportFunc(dir, cfg, func(name string, vals []float32) error {
		out = append(out, safetensors.Tensor{Name: name, Shape: shapes[name], Data: append([]float32(nil), vals...)})
		return nil
	})
	if err != nil {
		return Config{}, nil, err
	}
	order := map[string]int{}
	for i, p := range Params(cfg) {
		order[p.Name] = i
	}
	sort.Slice(out, func(a, b int) bool { return order[out[a].Name] < order[out[b].Name] })
	return cfg, out, nil
}

// ReadConfig returns the shape Import returns for dir, and checks what Import checks
// but for the values (an untied lm_head): config.json, and model.safetensors' header
// (every tensor there, with its shape; none other). Of the weights it reads only the
// biases of a directory whose config.json says it was exported bias-free, to tell
// whether they are all zero (then Bias is false).
func ReadConfig(dir string) (Config, error) {
	d, err := OpenDir(dir)
	if err != nil {
		return Config{}, err
	}
	d.Close()
	return d.Config(), nil
}

// Dir is a Hugging Face GPT-2 directory read as ReadConfig reads it (config.json
// and model.safetensors' header), its model.safetensors held open: its weights are
// then read (Import) without reading those again, and from the file the header is
// of, though another be renamed over it meanwhile.
type Dir struct {
	dir string
	pl  *importPlan
}

// OpenDir reads dir as ReadConfig does, keeping its model.safetensors open until
// Close.
func OpenDir(dir string) (*Dir, error) {
	pl, err := planImport(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{dir: dir, pl: pl}, nil
}

// Config is the directory's shape, as ReadConfig returns it.
func (d *Dir) Config() Config { return d.pl.cfg }

// Close closes the directory's model.safetensors.
func (d *Dir) Close() error { return d.pl.f.Close() }

// Import reads the weights as ImportFunc does, for the shape Config returns,
// without reading config.json or the file's header again.
func (d *Dir) Import(put func(name string, vals []float32) error) error {
	return d.pl.importAll(d.dir, put)
}

// ImportFunc reads the weights of dir, whose shape ReadConfig returned as cfg, tensor
// by tensor in the file's order, handing put each of Params(cfg) in our layout (our
// name, Conv1D weights transposed back, wte with its zero rows up to PaddedVocab):
// vals is valid only during the call. Beside the one tensor being read and its
// transpose, nothing holds the weights (an lm_head is compared with wte by a
// SHA-256 of each), so that the caller can put each straight into its place: the
// weights are in memory once, where Import's tensors and the caller's copy made two
// of them (mask buffers of any dtype, uint8 or bool as older transformers saved
// them, are read past). An error of put is returned as it is; after any error,
// what put was given may be incomplete or from an untied lm_head.
func ImportFunc(dir string, cfg Config, put func(name string, vals []float32) error) error {
	pl, err := planImport(dir)
	if err != nil {
		return err
	}
	defer pl.f.Close()
	planned(dir)
	if !sameModel(pl.cfg, cfg) {
		return fmt.Errorf("hfgpt2: import %s: its model is now %+v, not the %+v read before: was it replaced meanwhile?", dir, pl.cfg, cfg)
	}
	return pl.importAll(dir, put)
}

// importAll is ImportFunc's reading of the weights pl planned (dir's).
func (pl *importPlan) importAll(dir string, put func(name string, vals []float32) error) error {
	fail := func(err error) error { return fmt.Errorf("hfgpt2: import %s: %w", dir, err) }
	cfg := pl.cfg
	// out is our tensor being made from the file's (wte padded, a Conv1D weight
	// transposed): one buffer of the largest such one.
	largest := cfg.PaddedVocab * cfg.NEmbd
	for _, p := range Params(cfg) {
		if conv1D(p.Name) {
			largest = max(largest, numel(p.Shape))
		}
	}
	var (
		out           []float32
		wteSum, lmSum []byte
		putErr        error
	)
	putOne := func(file string, vals []float32) error {
		if file == pl.lmHead {
			lmSum = sumOf(vals)
			return nil
		}
		p, ok := pl.tensors[file]
		if !ok || (!cfg.Bias && strings.HasSuffix(p.Name, ".bias")) {
			return nil // (a mask buffer, a bias-free export's zero bias)
		}
		switch {
		case p.Name == "transformer.wte.weight":
			wteSum = sumOf(vals)
			if out == nil {
				out = make([]float32, largest)
			}
			n := numel(p.Shape)
			copy(out[:n], vals)
			clear(out[len(vals):n])
			vals = out[:n]
		case conv1D(p.Name):
			if out == nil {
				out = make([]float32, largest)
			}
			n := numel(p.Shape)
			transposeInto(out[:n], vals, p.Shape[1], p.Shape[0])
			vals = out[:n]
		}
		putErr = put(p.Name, vals)
		return putErr
	}
	err := streamTensors(pl, putOne)
	if putErr != nil {
		return putErr
	}
	if err != nil {
		return fail(err)
	}
	if pl.lmHead != "" && !bytes.Equal(lmSum, wteSum) {
		return fail(fmt.Errorf("%s: lm_head.weight differs from wte: an untied output layer, which gptkit (tied, as GPT-2) cannot represent", WeightsName))
	}
	return nil
}

// planned is called by ImportFunc once it has read the directory's config.json and
// the header of its model.safetensors (a variable: tests change the files then).
var planned = func(dir string) {}

// streamTensors reads the model.safetensors pl planned, from the file planImport
// opened (a file renamed over it since is not read), in one pass with
// safetensors.ReadInto, through one buffer of its largest tensor but the mask
// buffers (which are read past), handing each tensor's values to put once read; put's
// error is returned as it is. A tensor that is not the one planned (the file
// rewritten in place since its header was read) is an error naming it.
func streamTensors(pl *importPlan, put func(file string, vals []float32) error) error {
	var (
		buf     []float32
		pending string // the tensor read into buf, put at the next one or the end
		n       int
	)
	flush := func() error {
		if pending == "" {
			return nil
		}
		name := pending
		pending = ""
		return put(name, buf[:n])
	}
	var putErr error
	_, err := safetensors.ReadInto(io.NewSectionReader(pl.f, 0, pl.size), pl.size, func(in safetensors.Info) ([]float32, error) {
		if putErr = flush(); putErr != nil {
			return nil, putErr
		}
		if isMaskBuffer(in.Name) {
			return nil, nil
		}
		switch shape, ok := pl.shapes[in.Name]; {
		case !ok:
			return nil, fmt.Errorf("tensor %s, which its header did not list when read: was the file changed meanwhile?", in.Name)
		case !sameShape(in.Shape, shape):
			return nil, fmt.Errorf("tensor %s of shape %v, where its header gave %v when read: was the file changed meanwhile?", in.Name, in.Shape, shape)
		}
		n = numel(in.Shape)
		if buf == nil {
			buf = make([]float32, pl.largest)
		}
		if n > len(buf) {
			return nil, fmt.Errorf("internal error: tensor %s of %d values, over the %d planned", in.Name, n, len(buf))
		}
		pending = in.Name
		return buf[:n], nil
	})
	if err == nil {
		putErr = flush()
		err = putErr
	}
	if err != nil && err != putErr {
		err = fmt.Errorf("read %s: %w", pl.f.Name(), err)
	}
	return err
}

// importPlan is what planImport learned of a directory from its config.json and the
// header of its model.safetensors.
type importPlan struct {
	cfg     Config
	tensors map[string]Param // ours, by the file's name: all of Params, with biases
	shapes  map[string][]int // the file's tensors' shapes (not the mask buffers')
	lmHead  string           // the file's lm_head.weight, if it has one
	f       *os.File         // model.safetensors, open: the file the header is of
	size    int64            // its bytes
	largest int              // values of its largest tensor but the mask buffers
}

// planImport reads dir's config.json and model.safetensors' header and checks that
// they make a GPT2LMHeadModel (the checks, in the order and the words Import always
// gave them), reading the biases of a bias-free export to tell its shape. The plan
// holds model.safetensors open (the caller closes pl.f); none is open after an error.
func planImport(dir string) (pl *importPlan, err error) {
	fail := func(err error) (*importPlan, error) {
		return nil, fmt.Errorf("hfgpt2: import %s: %w", dir, err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		return fail(fmt.Errorf("%w (want a Hugging Face model directory with %s and %s)", err, ConfigName, WeightsName))
	}
	cfg, extra, err := fromHF(cj)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", ConfigName, err))
	}
	path := filepath.Join(dir, WeightsName)
	f, size, infos, err := readHeader(path)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, WeightsName+".index.json")); serr == nil {
			err = fmt.Errorf("%s holds a sharded checkpoint (%s.index.json and its model-NNNNN-of-NNNNN.safetensors files), which is not read here: save it as one file (transformers: save_pretrained(dir, max_shard_size=\"100GB\"))", dir, WeightsName)
		}
		return fail(err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	pl = &importPlan{tensors: map[string]Param{}, shapes: map[string][]int{}, f: f, size: size}
	// The mask buffers are skipped before any conversion: older transformers saved
	// them as uint8 or bool, which no float conversion takes.
	hf := map[string]*safetensors.Info{}
	for i := range infos {
		t := &infos[i]
		name := t.Name
		if !strings.HasPrefix(name, "transformer.") && name != "lm_head.weight" {
			name = "transformer." + name
		}
		if isMaskBuffer(name) {
			continue // causal-mask buffers, not parameters
		}
		pl.largest = max(pl.largest, numel(t.Shape))
		pl.shapes[t.Name] = t.Shape
		if hf[name] != nil {
			return fail(fmt.Errorf("%s: tensor %s appears with and without the transformer. prefix", WeightsName, t.Name))
		}
		hf[name] = t
	}

	full := cfg // with biases: what the HF file must hold
	full.Bias = true
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
		pl.tensors[t.Name] = p
	}
	if lm := hf["lm_head.weight"]; lm != nil {
		delete(hf, "lm_head.weight")
		if !sameShape(lm.Shape, []int{cfg.VocabSize, cfg.NEmbd}) {
			return fail(fmt.Errorf("%s: lm_head.weight differs from wte: an untied output layer, which gptkit (tied, as GPT-2) cannot represent", WeightsName))
		}
		pl.lmHead = lm.Name
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
		biases, err := safetensors.ReadExcept(f, size, func(name string) bool {
			p, ok := pl.tensors[name]
			return !ok || !strings.HasSuffix(p.Name, ".bias")
		})
		if err != nil {
			return fail(fmt.Errorf("read %s: %w", path, err))
		}
		allZero := true
		for _, t := range biases.Tensors {
			for _, x := range t.Data {
				allZero = allZero && x == 0
			}
		}
		if allZero {
			cfg.Bias = false
		}
	}
	pl.cfg = cfg
	return pl, nil
}

// readHeader opens the safetensors file path and reads its header; the file is
// left open for its tensors to be read (closed after an error).
func readHeader(path string) (f *os.File, size int64, infos []safetensors.Info, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("safetensors: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("safetensors: %w", err)
	}
	_, infos, err = safetensors.ReadHeader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return f, fi.Size(), infos, nil
}

// sameModel reports whether a and b are the same model shape.
func sameModel(a, b Config) bool {
	return a.VocabSize == b.VocabSize && a.PaddedVocab == b.PaddedVocab && a.NLayer == b.NLayer &&
		a.NHead == b.NHead && a.NEmbd == b.NEmbd && a.BlockSize == b.BlockSize && a.Bias == b.Bias
}

// sumOf is the SHA-256 of vals' bits: lm_head and wte are compared by theirs, so that
// neither is held to compare them (a collision, 2^-128 likely, would take an untied
// lm_head for a tied one).
func sumOf(vals []float32) []byte {
	h := sha256.New()
	hashFloats(h, vals)
	return h.Sum(nil)
}

// hashFloats writes vals' little-endian bits to h, 64K values at a time.
func hashFloats(h hash.Hash, vals []float32) {
	var b []byte
	for len(vals) > 0 {
		k := min(len(vals), 1<<16)
		b = b[:0]
		for _, x := range vals[:k] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		h.Write(b)
		vals = vals[k:]
	}
}

// isMaskBuffer reports whether a tensor name is one of GPT-2's causal-mask buffers
// (attn.bias, attn.masked_bias), which are not parameters.
func isMaskBuffer(name string) bool {
	return strings.HasSuffix(name, ".attn.bias") || strings.HasSuffix(name, ".attn.masked_bias")
}
