package loader

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"gptkit/internal/sharedtest"
	"gptkit/shards"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

type indexGolden struct {
	Name             string   `json:"name"`
	Seed             uint32   `json:"seed"`
	SeqLen           int      `json:"seq_len"`
	NumSamples       int64    `json:"num_samples"`
	Sizes            []int32  `json:"sizes"`
	TokensPerEpoch   int64    `json:"tokens_per_epoch"`
	Epochs           int      `json:"epochs"`
	N                int64    `json:"n"`
	Len              int64    `json:"len"`
	DocIdxPrefix     []int32  `json:"doc_idx_prefix"`
	DocIdxSHA        string   `json:"doc_idx_sha256"`
	SampleIdxPrefix  []int32  `json:"sample_idx_prefix"`
	SampleIdxSHA     string   `json:"sample_idx_sha256"`
	ShuffleIdxPrefix []uint32 `json:"shuffle_idx_prefix"`
	ShuffleIdxSHA    string   `json:"shuffle_idx_sha256"`
}

type blendGolden struct {
	Name          string    `json:"name"`
	Weights       []float64 `json:"weights"`
	NumSamples    int64     `json:"num_samples"`
	Size          int64     `json:"size"`
	Normalized    []float64 `json:"normalized"`
	Counts        []int64   `json:"counts"`
	BlendWeights  []float64 `json:"blend_weights"`
	DatasetPrefix []uint8   `json:"dataset_index_prefix"`
	DatasetSHA    string    `json:"dataset_index_sha256"`
	SamplePrefix  []int64   `json:"sample_index_prefix"`
	SampleSHA     string    `json:"sample_index_sha256"`
}

type rngGolden struct {
	Seed      uint32   `json:"seed"`
	RawPrefix []uint32 `json:"raw_prefix"`
	RawSHA    string   `json:"raw_sha256"`
	RawCount  int      `json:"raw_count"`
	Shuffles  []struct {
		N      int      `json:"n"`
		Prefix []uint32 `json:"prefix"`
		SHA    string   `json:"sha256"`
	} `json:"shuffles"`
	Intervals []struct {
		Max    string   `json:"max"`
		Values []string `json:"values"`
	} `json:"intervals"`
	After []uint32 `json:"after"`
}

func loadGolden[T any](t *testing.T, name string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []T `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return f.Cases
}

// leSHA is the sha256 of a slice's little-endian bytes (numpy's tobytes).
func leSHA[T any](a []T) string {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, a); err != nil {
		panic(err)
	}
	s := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(s[:])
}

func prefix[T any](a []T, n int) []T { return a[:min(n, len(a))] }

func equalSlices[T comparable](a, b []T) bool {
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

func TestNeoXIndexGolden(t *testing.T) {
	for _, g := range loadGolden[indexGolden](t, "neox_index_golden.json") {
		t.Run(g.Name, func(t *testing.T) {
			x, err := BuildNeoXIndex(g.Sizes, g.SeqLen, g.NumSamples, g.Seed)
			if err != nil {
				t.Fatal(err)
			}
			if x.TokensPerEpoch != g.TokensPerEpoch || x.Epochs != g.Epochs || x.NumPacked() != g.N || x.Len() != g.Len {
				t.Fatalf("tpe/epochs/N/len = %d/%d/%d/%d, numpy %d/%d/%d/%d",
					x.TokensPerEpoch, x.Epochs, x.NumPacked(), x.Len(), g.TokensPerEpoch, g.Epochs, g.N, g.Len)
			}
			if !equalSlices(prefix(x.DocIdx, len(g.DocIdxPrefix)), g.DocIdxPrefix) || leSHA(x.DocIdx) != g.DocIdxSHA {
				t.Errorf("doc_idx differs from numpy: %v vs %v", prefix(x.DocIdx, 16), prefix(g.DocIdxPrefix, 16))
			}
			if !equalSlices(prefix(x.SampleIdx, len(g.SampleIdxPrefix)), g.SampleIdxPrefix) || leSHA(x.SampleIdx) != g.SampleIdxSHA {
				t.Errorf("sample_idx differs from numpy: %v vs %v", prefix(x.SampleIdx, 16), prefix(g.SampleIdxPrefix, 16))
			}
			if !equalSlices(prefix(x.ShuffleIdx, len(g.ShuffleIdxPrefix)), g.ShuffleIdxPrefix) || leSHA(x.ShuffleIdx) != g.ShuffleIdxSHA {
				t.Errorf("shuffle_idx differs from numpy: %v vs %v", prefix(x.ShuffleIdx, 16), prefix(g.ShuffleIdxPrefix, 16))
			}
			checkSpans(t, x, g.Sizes)
		})
	}
}

// checkSpans checks every sample resolves to SeqLen+1 in-range tokens that
// continue exactly where the previous packed sample ended.
func checkSpans(t *testing.T, x *NeoXIndex, sizes []int32) {
	t.Helper()
	var spans []Span
	for i := int64(0); i < int64(len(x.ShuffleIdx)); i++ {
		spans = x.AppendSpans(spans[:0], i, sizes)
		total := 0
		for _, s := range spans {
			if s.Off < 0 || s.Len < 0 || s.Off+s.Len > sizes[s.Doc] {
				t.Fatalf("sample %d: span %+v outside document of %d tokens", i, s, sizes[s.Doc])
			}
			total += int(s.Len)
		}
		if total != x.SeqLen+1 {
			t.Fatalf("sample %d: %d tokens, want %d (%+v)", i, total, x.SeqLen+1, spans)
		}
	}
}

func TestNeoXBlendGolden(t *testing.T) {
	for _, g := range loadGolden[blendGolden](t, "neox_blend_golden.json") {
		t.Run(g.Name, func(t *testing.T) {
			norm, counts, err := NeoXBlendWeights(g.Weights, g.NumSamples)
			if err != nil {
				t.Fatal(err)
			}
			if !equalSlices(norm, g.Normalized) || !equalSlices(counts, g.Counts) {
				t.Fatalf("normalized/counts = %v/%v, numpy %v/%v", norm, counts, g.Normalized, g.Counts)
			}
			w := make([]float64, len(norm))
			for i, v := range norm {
				w[i] = v / numpySum(norm)
			}
			if !equalSlices(w, g.BlendWeights) {
				t.Errorf("np.sum normalisation = %v, numpy %v", w, g.BlendWeights)
			}
			di, si, err := BlendNeoX(norm, g.Size)
			if err != nil {
				t.Fatal(err)
			}
			if !equalSlices(prefix(di, len(g.DatasetPrefix)), g.DatasetPrefix) || leSHA(di) != g.DatasetSHA {
				t.Errorf("dataset_index differs: %v vs %v", prefix(di, 16), prefix(g.DatasetPrefix, 16))
			}
			if !equalSlices(prefix(si, len(g.SamplePrefix)), g.SamplePrefix) || leSHA(si) != g.SampleSHA {
				t.Errorf("dataset_sample_index differs: %v vs %v", prefix(si, 16), prefix(g.SamplePrefix, 16))
			}
		})
	}
}

func TestMT19937Golden(t *testing.T) {
	for _, g := range loadGolden[rngGolden](t, "neox_rng_golden.json") {
		t.Run(strconv.FormatUint(uint64(g.Seed), 10), func(t *testing.T) {
			r := NewMT19937(g.Seed)
			raw := make([]uint32, g.RawCount)
			for i := range raw {
				raw[i] = r.Uint32()
			}
			if !equalSlices(prefix(raw, len(g.RawPrefix)), g.RawPrefix) || leSHA(raw) != g.RawSHA {
				t.Fatalf("raw output differs: %v vs %v", prefix(raw, 4), prefix(g.RawPrefix, 4))
			}
			for _, s := range g.Shuffles {
				a := make([]uint32, s.N)
				for i := range a {
					a[i] = uint32(i)
				}
				r.ShuffleUint32(a)
				if !equalSlices(prefix(a, len(s.Prefix)), s.Prefix) || leSHA(a) != s.SHA {
					t.Fatalf("shuffle(%d) differs: %v vs %v", s.N, prefix(a, 8), prefix(s.Prefix, 8))
				}
			}
			for _, iv := range g.Intervals {
				mx, err := strconv.ParseUint(iv.Max, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				for k, vs := range iv.Values {
					want, _ := strconv.ParseUint(vs, 10, 64)
					if got := r.Interval(mx); got != want {
						t.Fatalf("Interval(%d) #%d = %d, numpy %d", mx, k, got, want)
					}
				}
			}
			for k, want := range g.After {
				if got := r.Uint32(); got != want {
					t.Fatalf("word %d after intervals = %d, numpy %d", k, got, want)
				}
			}
		})
	}
}

// numpyPython returns a python3 that can import numpy, or "".
func numpyPython() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil {
			if exec.Command(path, "-c", "import numpy").Run() == nil {
				return path
			}
		}
	}
	return ""
}

// TestGoldensReproducible regenerates the goldens with real numpy and checks
// they equal the committed ones byte for byte. The
// committed goldens are the contract. Without numpy it skips, or fails when CI=true.
func TestGoldensReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	py := numpyPython()
	if py == "" {
		sharedtest.Missing(t, "python3 with numpy (Debian python3-numpy; .ci/run installs it)")
	}
	dir := t.TempDir()
	out, err := exec.Command(py, filepath.Join("testdata", "make_golden.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make_golden.py: %v\n%s", err, out)
	}
	for _, name := range []string{"neox_index_golden.json", "neox_blend_golden.json", "neox_rng_golden.json"} {
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: regenerated file differs from testdata (refresh with python3 testdata/make_golden.py)", name)
		}
	}
}

// TestNeoXGoldenThroughOpen runs every index golden through the public path: a
// dataset whose documents have the golden sizes (each token encoding its document
// and offset), opened with Open and OrderNeoX, must have GPT-NeoX's arrays and
// length, and every sample must read the tokens those arrays name.
func TestNeoXGoldenThroughOpen(t *testing.T) {
	for _, g := range loadGolden[indexGolden](t, "neox_index_golden.json") {
		t.Run(g.Name, func(t *testing.T) {
			docs := make([][]int, len(g.Sizes))
			for d, n := range g.Sizes {
				docs[d] = make([]int, n)
				for o := range docs[d] {
					docs[d][o] = d<<16 | o
				}
			}
			dir := writeDataset(t, t.TempDir(), docs, 1+len(docs)/150, shards.Int32, nil, "fp")
			d := openData(t, Options{Data: dir, SeqLen: g.SeqLen, Seed: g.Seed, Order: OrderNeoX, Split: "1,0,0", NumSamples: [3]int64{g.NumSamples, 0, 0}})
			s := d.Train.(*Samples)
			x := s.Index
			if s.Len() != g.Len || leSHA(x.DocIdx) != g.DocIdxSHA || leSHA(x.SampleIdx) != g.SampleIdxSHA || leSHA(x.ShuffleIdx) != g.ShuffleIdxSHA {
				t.Fatalf("Open's index differs from GPT-NeoX's (len %d vs %d)", s.Len(), g.Len)
			}
			var spans []Span
			var ids []int32
			for i := range s.Len() {
				spans = x.AppendSpans(spans[:0], i, g.Sizes)
				ids = s.SampleInt32(i, ids[:0])
				k := 0
				for _, sp := range spans {
					for o := sp.Off; o < sp.Off+sp.Len; o++ {
						if ids[k] != sp.Doc<<16|o {
							t.Fatalf("sample %d token %d: doc %d offset %d, GPT-NeoX reads doc %d offset %d", i, k, ids[k]>>16, ids[k]&0xffff, sp.Doc, o)
						}
						k++
					}
				}
			}
			// Reopening reads the cached file and gives the same arrays.
			d2 := openData(t, Options{Data: dir, SeqLen: g.SeqLen, Seed: g.Seed, Order: OrderNeoX, Split: "1,0,0", NumSamples: [3]int64{g.NumSamples, 0, 0}})
			if x2 := d2.Train.(*Samples).Index; leSHA(x2.ShuffleIdx) != g.ShuffleIdxSHA || leSHA(x2.SampleIdx) != g.SampleIdxSHA || leSHA(x2.DocIdx) != g.DocIdxSHA {
				t.Fatal("the cached index differs from GPT-NeoX's")
			}
		})
	}
}
