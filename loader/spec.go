package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DataSpec is Options.Data parsed: which datasets feed each split and with which
// weights.
type DataSpec struct {
	// Train lists the training datasets; without Valid and Test they are also the
	// source of the valid and test splits (by Options.Split or their manifests).
	Train []WeightedPath
	// Valid and Test list separate validation and test datasets (GPT-NeoX's
	// valid_data_paths, test_data_paths), used whole (a dataset whose manifest labels
	// its shards by split gives the listed split's shards only); only a blend file
	// sets them.
	Valid, Test []WeightedPath
	// Blended is true for the weighted forms (a blend file, "W:PATH,..."): every
	// split is then a Blend, as GPT-NeoX builds a BlendableDataset for weighted
	// data paths, even of one dataset. A plain location gives plain Samples.
	Blended bool
}

// WeightedPath is one dataset of a blend.
type WeightedPath struct {
	// Path is a dataset directory, s3://bucket/prefix or a bare PREFIX (for
	// PREFIX.bin and PREFIX.idx).
	Path   string  `yaml:"path"`
	Weight float64 `yaml:"weight"`
}

// blendFile is the YAML blend format (see doc.go).
type blendFile struct {
	Datasets []blendEntry `yaml:"datasets"`
	Valid    []blendEntry `yaml:"valid"`
	Test     []blendEntry `yaml:"test"`
}

type blendEntry struct {
	Path   string   `yaml:"path"`
	Weight *float64 `yaml:"weight"`
}

// ParseData parses an Options.Data string: a blend file (ending in .yaml or .yml,
// read here), an inline blend "W1:PATH1,W2:PATH2,..." (each part a weight, a colon
// and a location), or one location.
func ParseData(data string) (*DataSpec, error) {
	switch {
	case data == "":
		return nil, errors.New("loader: no data given (want a dataset directory, s3://bucket/prefix, a PREFIX of PREFIX.bin/.idx, a blend FILE.yaml or W1:PATH1,W2:PATH2)")
	case strings.HasSuffix(data, ".yaml") || strings.HasSuffix(data, ".yml"):
		if strings.Contains(data, "://") {
			// os.ReadFile would say "open s3://b/x.yaml: no such file or directory".
			return nil, fmt.Errorf("loader: blend file %s: a blend file is read from a local path, not a URL: copy it to this machine and pass its path (the datasets it lists may be s3:// locations)", data)
		}
		b, err := os.ReadFile(data)
		if err != nil {
			return nil, fmt.Errorf("loader: read blend file %s: %w", data, err)
		}
		return ParseBlendFile(data, b)
	case isInlineBlend(data):
		return parseInline(data)
	}
	return &DataSpec{Train: []WeightedPath{{Path: data, Weight: 1}}}, nil
}

// isInlineBlend reports whether data looks like "W:PATH[,...]": its text before the
// first colon is a number (s3://... and plain paths are not).
func isInlineBlend(data string) bool {
	w, _, ok := strings.Cut(data, ":")
	if !ok {
		return false
	}
	_, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
	return err == nil
}

func parseInline(data string) (*DataSpec, error) {
	spec := &DataSpec{Blended: true}
	for k, part := range strings.Split(data, ",") {
		ws, p, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("loader: data %q: part %d %q is not WEIGHT:PATH (write the blend as 0.7:dirA,0.3:dirB)", data, k+1, part)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(ws), 64)
		if err != nil {
			return nil, fmt.Errorf("loader: data %q: part %d: weight %q is not a number (write the blend as 0.7:dirA,0.3:dirB)", data, k+1, ws)
		}
		if err := checkEntry(w, strings.TrimSpace(p)); err != nil {
			return nil, fmt.Errorf("loader: data %q: part %d: %w", data, k+1, err)
		}
		spec.Train = append(spec.Train, WeightedPath{Path: strings.TrimSpace(p), Weight: w})
	}
	return spec, nil
}

func checkEntry(w float64, p string) error {
	if w == 0 {
		return fmt.Errorf("weight 0 for %s: a blend's weights must be positive (to leave a dataset out, remove it from the blend)", p)
	}
	if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
		return fmt.Errorf("weight %v must be a positive number", w)
	}
	if p == "" {
		return errors.New("empty path")
	}
	return nil
}

// ParseBlendFile parses a blend file's bytes; name is the file's path, used in
// errors and as the base of relative dataset paths.
func ParseBlendFile(name string, b []byte) (*DataSpec, error) {
	var f blendFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("loader: blend file %s is empty (want datasets: [{path: dirA, weight: 0.7}, ...])", name)
		}
		return nil, fmt.Errorf("loader: blend file %s: %w (want datasets: [{path: dirA, weight: 0.7}, ...])", name, err)
	}
	if len(f.Datasets) == 0 {
		return nil, fmt.Errorf("loader: blend file %s lists no datasets (want datasets: [{path: dirA, weight: 0.7}, ...])", name)
	}
	base := filepath.Dir(name)
	spec := &DataSpec{Blended: true}
	var err error
	conv := func(key string, es []blendEntry) []WeightedPath {
		var out []WeightedPath
		for k, e := range es {
			w := 1.0
			if e.Weight != nil {
				w = *e.Weight
			}
			if cerr := checkEntry(w, e.Path); cerr != nil && err == nil {
				err = fmt.Errorf("loader: blend file %s: %s[%d]: %w", name, key, k, cerr)
			}
			p := strings.TrimPrefix(e.Path, "file://") // relative to the file too
			if !strings.Contains(p, "://") && !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			out = append(out, WeightedPath{Path: p, Weight: w})
		}
		return out
	}
	spec.Train = conv("datasets", f.Datasets)
	spec.Valid = conv("valid", f.Valid)
	spec.Test = conv("test", f.Test)
	if err != nil {
		return nil, err
	}
	return spec, nil
}
