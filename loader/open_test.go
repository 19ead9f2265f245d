package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
)

var ctx = context.Background()

// openData opens o with a fresh cache directory unless o sets one.
func openData(t *testing.T, o Options) *Data {
	t.Helper()
	if o.CacheDir == "" {
		o.CacheDir = t.TempDir()
	}
	d, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// sameSource checks that a and b hold the same samples, through Sample and
// SampleInt32.
func sameSource(t *testing.T, what string, a, b Source) {
	t.Helper()
	if a.Len() != b.Len() || a.SeqLen() != b.SeqLen() {
		t.Fatalf("%s: len/seq_len %d/%d vs %d/%d", what, a.Len(), a.SeqLen(), b.Len(), b.SeqLen())
	}
	var x, y []int
	var z []int32
	for i := range a.Len() {
		x, y, z = a.Sample(i, x[:0]), b.Sample(i, y[:0]), b.SampleInt32(i, z[:0])
		if !slices.Equal(x, y) || len(z) != len(x) {
			t.Fatalf("%s: sample %d differs: %v vs %v", what, i, x, y)
		}
		for k := range z {
			if int(z[k]) != x[k] {
				t.Fatalf("%s: SampleInt32(%d) differs from Sample at %d", what, i, k)
			}
		}
	}
}

func TestOpenLocalSplits(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	docs := randomDocs(rnd, 200)
	for _, dtype := range []shards.DType{shards.Uint16, shards.Int32} {
		dir := writeDataset(t, t.TempDir(), docs, 3, dtype, nil, "fp")
		ds := makeDatasetAt(t, dir)
		for _, order := range []string{OrderNeoX, OrderDefault} {
			d := openData(t, Options{Data: dir, SeqLen: 9, Seed: 17, Order: order, Split: "8,1,1", NumSamples: [3]int64{300, 20, 0}})
			if d.Test != nil || d.Tokenizer.Fingerprint != "fp" {
				t.Fatalf("test %v, tokenizer %+v", d.Test, d.Tokenizer)
			}
			r := SplitRanges(len(docs), [3]float64{8, 1, 1})
			for k, n := range []int64{300, 20} {
				want, err := NewSamples(ds, [2]int64{int64(r[k][0]), int64(r[k][1])}, 9, n, 17, order)
				if err != nil {
					t.Fatal(err)
				}
				sameSource(t, fmt.Sprintf("%s %s %s", dtype, order, SplitNames[k]), d.Split(k), want)
				if d.Split(k).Len() < n-1 || (order == OrderDefault && d.Split(k).Len() < n) {
					t.Fatalf("%d samples, asked for %d", d.Split(k).Len(), n)
				}
			}
			for _, f := range d.IndexFiles {
				if !strings.HasPrefix(f, filepath.Join(dir, cacheDirName)) {
					t.Errorf("index file %s is not beside the data", f)
				}
			}
		}
	}
}

// makeDatasetAt opens the dataset in dir.
func makeDatasetAt(t *testing.T, dir string) *shards.Dataset {
	t.Helper()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := shards.OpenDataset(ctx, st, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestOpenPresplit(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	docs := randomDocs(rnd, 90)
	dir := writeDataset(t, t.TempDir(), docs, 3, shards.Uint16, []string{"train", "val", "test"}, "fp")
	ds := makeDatasetAt(t, dir)
	d := openData(t, Options{Data: dir, SeqLen: 5, Seed: 3, Order: OrderNeoX, NumSamples: [3]int64{40, 10, 10}})
	for k := range 3 {
		want, err := NewSamples(ds, [2]int64{int64(30 * k), int64(30 * (k + 1))}, 5, []int64{40, 10, 10}[k], 3, OrderNeoX)
		if err != nil {
			t.Fatal(err)
		}
		sameSource(t, SplitNames[k], d.Split(k), want)
	}
	// Only the train shards: asking for test samples fails, asking for none works.
	dir2 := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, []string{"train", "val"}, "fp")
	if _, err := Open(ctx, Options{Data: dir2, SeqLen: 5, NumSamples: [3]int64{4, 0, 4}, CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "test") {
		t.Fatalf("test samples of a dataset without test shards: %v", err)
	}
	openData(t, Options{Data: dir2, SeqLen: 5, NumSamples: [3]int64{4, 4, 0}})
	if _, err := Open(ctx, Options{Data: dir2, SeqLen: 5, NumSamples: [3]int64{4, 4, 4}, Split: "9,1,0", CacheDir: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "make the dataset with a test split") || strings.Contains(err.Error(), "change the split") {
		t.Fatalf("test samples of a presplit dataset without test shards: %v, want the next step", err)
	}

	// Shards all labeled train (a corpus without a val split: prep pile-00, prep
	// custom) are an unsplit dataset: split divides them, as an unlabeled one.
	dir3 := writeDataset(t, t.TempDir(), docs, 3, shards.Uint16, []string{"train", "train", "train"}, "fp")
	d3 := openData(t, Options{Data: dir3, SeqLen: 5, Seed: 3, Order: OrderNeoX, Split: "8,1,1", NumSamples: [3]int64{40, 10, 10}})
	for k, r := range SplitRanges(len(docs), [3]float64{8, 1, 1}) {
		want, err := NewSamples(makeDatasetAt(t, dir3), [2]int64{int64(r[0]), int64(r[1])}, 5, []int64{40, 10, 10}[k], 3, OrderNeoX)
		if err != nil {
			t.Fatal(err)
		}
		sameSource(t, "all-train "+SplitNames[k], d3.Split(k), want)
	}
}

// blendWant builds the expected blend of split k by hand: GPT-NeoX's per-dataset
// counts, one Samples per dataset, BlendNeoX over the sum of their lengths.
func blendWant(t *testing.T, dirs []string, weights []float64, split [3]float64, k int, L int, n int64, seed uint32, order string) *Blend {
	t.Helper()
	norm, counts, err := NeoXBlendWeights(weights, n)
	if err != nil {
		t.Fatal(err)
	}
	var srcs []Source
	for c, dir := range dirs {
		ds := makeDatasetAt(t, dir)
		r := SplitRanges(int(ds.Len()), split)[k]
		s, err := NewSamples(ds, [2]int64{int64(r[0]), int64(r[1])}, L, counts[c], seed, order)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	b, err := NewBlend(srcs, norm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenBlend(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	base := t.TempDir()
	var dirs []string
	for c, n := range []int{60, 150, 40} {
		dirs = append(dirs, writeDataset(t, filepath.Join(base, fmt.Sprintf("set%d", c)), randomDocs(rnd, n), 2, shards.Uint16, nil, "fp"))
	}
	weights := []float64{0.5, 0.3, 0.2}
	inline := fmt.Sprintf("0.5:%s,0.3:%s,0.2:%s", dirs[0], dirs[1], dirs[2])
	yamlPath := filepath.Join(base, "blend.yaml")
	if err := os.WriteFile(yamlPath, []byte("# three sets\ndatasets:\n  - path: set0\n    weight: 0.5\n  - {path: set1, weight: 0.3}\n  - path: "+dirs[2]+"\n    weight: 0.2\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{OrderNeoX, OrderDefault} {
		for _, data := range []string{inline, yamlPath} {
			d := openData(t, Options{Data: data, SeqLen: 6, Seed: 5, Order: order, Split: "90,10,0", NumSamples: [3]int64{200, 12, 0}})
			for k, n := range []int64{200, 12} {
				want := blendWant(t, dirs, weights, [3]float64{90, 10, 0}, k, 6, n, 5, order)
				got := d.Split(k).(*Blend)
				if got.Len() < n {
					t.Fatalf("blend of %d samples, asked for %d", got.Len(), n)
				}
				if !slices.Equal(got.DatasetIndex, want.DatasetIndex) || !slices.Equal(got.SampleIndex, want.SampleIndex) {
					t.Fatalf("%s %s: blend index differs", data, SplitNames[k])
				}
				sameSource(t, data+" "+SplitNames[k], got, want)
				for _, i := range []int64{-1, got.Len()} {
					func() {
						defer func() {
							if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "out of range") {
								t.Errorf("Locate(%d) of %d samples: %v, want an out-of-range panic", i, got.Len(), r)
							}
						}()
						got.Locate(i)
					}()
				}
			}
		}
	}
	// Separate validation data, weights defaulting to 1.
	sep := filepath.Join(base, "sep.yaml")
	if err := os.WriteFile(sep, []byte("datasets: [{path: set0, weight: 2}, {path: set1}]\nvalid: [{path: set2}]\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	d := openData(t, Options{Data: sep, SeqLen: 6, Seed: 5, Order: OrderNeoX, NumSamples: [3]int64{50, 7, 0}})
	sameSource(t, "separate train", d.Train, blendWant(t, dirs[:2], []float64{2, 1}, [3]float64{1, 0, 0}, Train, 6, 50, 5, OrderNeoX))
	sameSource(t, "separate valid", d.Valid, blendWant(t, dirs[2:], []float64{1}, [3]float64{1, 0, 0}, Train, 6, 7, 5, OrderNeoX))
	if _, err := Open(ctx, Options{Data: sep, SeqLen: 6, NumSamples: [3]int64{50, 7, 3}, CacheDir: t.TempDir()}); err == nil {
		t.Fatal("test samples without test datasets: no error")
	}

	// Datasets of different tokenizers do not blend.
	other := writeDataset(t, filepath.Join(base, "other"), randomDocs(rnd, 40), 1, shards.Uint16, nil, "other-fp")
	_, err := Open(ctx, Options{Data: "1:" + dirs[0] + ",1:" + other, SeqLen: 4, NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("blend of two tokenizers: %v", err)
	}
}

func TestOpenBarePrefix(t *testing.T) {
	rnd := rand.New(rand.NewPCG(13, 14))
	docs := randomDocs(rnd, 70)
	dir := writeDataset(t, t.TempDir(), docs, 1, shards.Uint16, nil, "fp")
	ds := makeDatasetAt(t, dir)
	prefix := filepath.Join(dir, "data_00_text_document")
	for _, data := range []string{prefix, prefix + ".bin", "file://" + prefix} {
		d := openData(t, Options{Data: data, SeqLen: 7, Seed: 1, Order: OrderNeoX, Split: "1", NumSamples: [3]int64{80, 0, 0}})
		want, err := NewSamples(ds, [2]int64{0, 70}, 7, 80, 1, OrderNeoX)
		if err != nil {
			t.Fatal(err)
		}
		sameSource(t, data, d.Train, want)
		if d.Tokenizer != (shards.TokenizerInfo{}) {
			t.Fatalf("bare shard tokenizer %+v", d.Tokenizer)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "nothing"), t.TempDir(), "ftp://x/y", ""} {
		if _, err := Open(ctx, Options{Data: bad, SeqLen: 7, NumSamples: [3]int64{1, 0, 0}, CacheDir: t.TempDir()}); err == nil {
			t.Errorf("Open(%q): no error", bad)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := writeDataset(t, t.TempDir(), randomDocs(rand.New(rand.NewPCG(1, 1)), 30), 1, shards.Uint16, nil, "fp")
	for _, o := range []Options{
		{Data: dir, SeqLen: 0, NumSamples: [3]int64{1, 0, 0}},
		{Data: dir, SeqLen: 4},
		{Data: dir, SeqLen: 4, NumSamples: [3]int64{-1, 0, 0}},
		{Data: dir, SeqLen: 4, NumSamples: [3]int64{1, 0, 0}, Order: "random"},
		{Data: dir, SeqLen: 4, NumSamples: [3]int64{1, 0, 0}, Split: "x"},
		{Data: dir, SeqLen: 4, NumSamples: [3]int64{1, 0, 0}, Split: "1,0,0"},
		{Data: dir, SeqLen: 4, NumSamples: [3]int64{1, 5, 0}, Split: "1,0,0"},
		{Data: "0:" + dir, SeqLen: 4, NumSamples: [3]int64{1, 0, 0}},
		{Data: "1:" + dir + ",x", SeqLen: 4, NumSamples: [3]int64{1, 0, 0}},
	} {
		o.CacheDir = t.TempDir()
		d, err := Open(ctx, o)
		if (err == nil) != (o.Split == "1,0,0" && o.NumSamples[1] == 0) {
			t.Errorf("%+v: err %v", o, err)
		}
		if d != nil {
			d.Close()
		}
	}
}

// logBuffer is a Logger writing to a buffer, for checking cache messages.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), &b
}

// TestSeparateListsKeepSplitLabels: a blend file with separate valid (test) lists uses
// its datasets whole, except one whose manifest labels shards by split: under
// datasets it gives its train shards only (its val shards once leaked into training),
// under valid its val shards.
func TestSeparateListsKeepSplitLabels(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	base := t.TempDir()
	writeDataset(t, filepath.Join(base, "lab"), randomDocs(rnd, 60), 2, shards.Uint16, []string{"train", "val"}, "fp")
	writeDataset(t, filepath.Join(base, "whole"), randomDocs(rnd, 40), 2, shards.Uint16, nil, "fp")
	file := filepath.Join(base, "sep.yaml")
	if err := os.WriteFile(file, []byte("datasets: [{path: lab}, {path: whole}]\nvalid: [{path: lab}]\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	d := openData(t, Options{Data: file, SeqLen: 4, Seed: 5, NumSamples: [3]int64{40, 5, 0}})
	lab := d.Train.(*Blend).Sources[0].(*Samples)
	if lab.Docs != [2]int64{0, 30} {
		t.Errorf("train from the labeled dataset: documents %v, want its train shard's [0 30]", lab.Docs)
	}
	if whole := d.Train.(*Blend).Sources[1].(*Samples); whole.Docs != [2]int64{0, 40} {
		t.Errorf("train from the unlabeled dataset: documents %v, want all [0 40]", whole.Docs)
	}
	var valid *Samples
	switch v := d.Valid.(type) {
	case *Samples:
		valid = v
	case *Blend:
		valid = v.Sources[0].(*Samples)
	}
	if valid.Docs != [2]int64{30, 60} {
		t.Errorf("valid from the labeled dataset: documents %v, want its val shard's [30 60]", valid.Docs)
	}
	bad := filepath.Join(base, "bad.yaml")
	os.WriteFile(bad, []byte("datasets: [{path: whole}]\ntest: [{path: lab}]\n"), 0o666)
	if _, err := Open(ctx, Options{Data: bad, SeqLen: 4, NumSamples: [3]int64{10, 0, 3}, CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "labels no shard test") {
		t.Errorf("a labeled dataset without test shards listed under test: %v", err)
	}
}

// TestEmptyDocumentsSplit: a split whose documents are all empty is an EmptySplitError
// naming the dataset and the next step (train adds its eval_steps 0 hint to it).
func TestEmptyDocumentsSplit(t *testing.T) {
	dir := writeDataset(t, filepath.Join(t.TempDir(), "d"), [][]int{{1, 2, 3, 4, 5, 6, 7, 8}, {}, {}}, 3, shards.Uint16, []string{"train", "val", "val"}, "fp")
	_, err := Open(ctx, Options{Data: dir, SeqLen: 2, NumSamples: [3]int64{2, 1, 0}, CacheDir: t.TempDir()})
	var es *EmptySplitError
	if !errors.As(err, &es) || es.Split != Valid || !strings.Contains(err.Error(), "all empty") {
		t.Fatalf("all-empty val documents: %v", err)
	}
}

// TestDataKeys: a split's DataKey names the data its samples come from: the same for
// the same shards at another path, another seed, L or sample count, or weights of the
// same ratio; another for changed tokens, other blend weights or another dataset.
func TestDataKeys(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 32))
	docs := randomDocs(rnd, 80)
	a := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	aCopy := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	for _, d := range docs {
		for k := range d {
			d[k] = (d[k] + 1) % 60000
		}
	}
	changed := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	b := writeDataset(t, t.TempDir(), randomDocs(rnd, 50), 1, shards.Uint16, nil, "fp")
	key := func(data string, seed uint32, L int, n int64) string {
		t.Helper()
		d := openData(t, Options{Data: data, SeqLen: L, Seed: seed, Split: "9,1,0", NumSamples: [3]int64{n, 4, 0}})
		if d.DataKeys[Valid] == "" || d.DataKeys[Test] != "" {
			t.Fatalf("%s: data keys %q", data, d.DataKeys)
		}
		return d.DataKeys[Train]
	}
	base := key(a, 1, 8, 40)
	for name, k := range map[string]string{
		"another path":  key(aCopy, 1, 8, 40),
		"another seed":  key(a, 2, 8, 40),
		"another L":     key(a, 1, 5, 40),
		"another count": key(a, 1, 8, 400),
	} {
		if k != base {
			t.Errorf("%s: the data key changed", name)
		}
	}
	blend := key("1:"+a+",1:"+b, 1, 8, 40)
	if key("2:"+aCopy+",2:"+b, 1, 8, 40) != blend {
		t.Error("weights of the same ratio changed the data key")
	}
	seen := map[string]string{base: "base", blend: "blend"}
	for name, k := range map[string]string{
		"changed tokens": key(changed, 1, 8, 40),
		"another set":    key(b, 1, 8, 40),
		"blend weights":  key("3:"+a+",1:"+b, 1, 8, 40),
		"blend of one":   key("1:"+a, 1, 8, 40),
	} {
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: the data key is %s's", name, prev)
		}
		seen[k] = name
	}
}

// TestOpenEveryTokenOncePerEpoch reads samples through Open only, from documents
// whose token ids are all different (so a token names its document and offset),
// over several shards with empty documents: each sample is L+1 consecutive tokens of
// whole documents in turn, and with OrderDefault the first ceil(tpe/L) samples (an
// epoch) read every token as an input (of its first L), at most the next epoch's
// first L-1 a second time.
func TestOpenEveryTokenOncePerEpoch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	for trial := range 30 {
		docs := make([][]int, 3+rnd.IntN(40))
		where := map[int][2]int{} // token -> document, offset
		tok, tpe := 1, 0
		for i := range docs {
			if rnd.IntN(4) > 0 {
				docs[i] = make([]int, rnd.IntN(15))
			}
			for k := range docs[i] {
				docs[i][k], where[tok] = tok, [2]int{i, k}
				tok++
			}
			tpe += len(docs[i])
		}
		if tpe == 0 {
			continue
		}
		dtype := []shards.DType{shards.Uint16, shards.Int32}[trial%2]
		dir := writeDataset(t, t.TempDir(), docs, 1+rnd.IntN(4), dtype, nil, "fp")
		L := 1 + rnd.IntN(12)
		n := int64(1 + rnd.IntN(4*tpe/L+2))
		for _, order := range []string{OrderDefault, OrderNeoX} {
			s := openData(t, Options{Data: dir, SeqLen: L, Seed: rnd.Uint32(), Order: order, Split: "1,0,0", NumSamples: [3]int64{n, 0, 0}}).Train
			epoch := int64((tpe + L - 1) / L)
			inputs := map[int]int{}
			var got []int
			for i := range s.Len() {
				if got = s.Sample(i, got[:0]); len(got) != L+1 {
					t.Fatalf("trial %d %s: sample %d has %d tokens", trial, order, i, len(got))
				}
				for k := 1; k <= L; k++ {
					p, q := where[got[k-1]], where[got[k]]
					if q != [2]int{p[0], p[1] + 1} && (q[1] != 0 || p[1] != len(docs[p[0]])-1) {
						t.Fatalf("trial %d %s: sample %d = %v: token %d does not follow token %d", trial, order, i, got, got[k], got[k-1])
					}
				}
				if i < epoch {
					for _, v := range got[:L] {
						inputs[v]++
					}
				}
			}
			if order == OrderDefault && s.Len() >= epoch {
				twice := 0
				for v := 1; v < tok; v++ {
					if inputs[v] < 1 || inputs[v] > 2 {
						t.Fatalf("trial %d: token %d is an input of %d samples of the first epoch", trial, v, inputs[v])
					}
					if inputs[v] == 2 {
						twice++
					}
				}
				if twice > L-1 {
					t.Fatalf("trial %d: %d tokens read twice in the first epoch, L=%d", trial, twice, L)
				}
			}
		}
	}
}

// TestBlendFileMissingDataset: a blend file's dataset that does not open is named
// with the file and its entry (the error named only the path, joined with the file's
// directory, so a path written relative to the working directory was a puzzle).
func TestBlendFileMissingDataset(t *testing.T) {
	dir := t.TempDir()
	good := writeDataset(t, filepath.Join(dir, "good"), randomDocs(rand.New(rand.NewPCG(1, 2)), 20), 1, shards.Uint16, nil, "fp")
	blend := filepath.Join(dir, "blend.yaml")
	if err := os.WriteFile(blend, []byte("datasets:\n  - {path: "+good+", weight: 0.7}\n  - {path: data/nope, weight: 0.3}\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, Options{Data: blend, SeqLen: 4, NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir()})
	want := "loader: blend file " + blend + ": datasets[1] (relative paths in a blend file are relative to its directory, " + dir + "): " + filepath.Join(dir, "data/nope") + ": no such dataset"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %s...", err, want)
	}
	if err := os.WriteFile(blend, []byte("datasets: [{path: "+good+"}]\nvalid: [{path: /nonexistent/val}]\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, Options{Data: blend, SeqLen: 4, NumSamples: [3]int64{10, 2, 0}, CacheDir: t.TempDir()})
	want = "loader: blend file " + blend + ": valid[0]: /nonexistent/val: no such dataset"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %s...", err, want)
	}
}

// TestValidRepeatsWarned: asking for more valid samples than the split holds built an
// index of several epochs of it, and an evaluation then counted its samples two or
// three times each, unevenly, with only an info line's epochs=3 to say so; now a
// warning names the samples an epoch holds and the count asked for. The train split's
// epochs are not warned about.
func TestValidRepeatsWarned(t *testing.T) {
	docs := make([][]int, 20)
	for i := range docs {
		docs[i] = []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	}
	dir := writeDataset(t, filepath.Join(t.TempDir(), "d"), docs, 2, shards.Uint16, []string{"train", "val"}, "fp")
	log, buf := logBuffer()
	d, err := Open(ctx, Options{Data: dir, SeqLen: 4, Seed: 1, NumSamples: [3]int64{100, 50, 0}, CacheDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "the valid split holds fewer samples than asked for") ||
		!strings.Contains(out, "samples_per_epoch=22") || !strings.Contains(out, "asked=50") {
		t.Errorf("valid split asked for 50 of its 22 samples: log\n%s\nwant a warning naming both", out)
	}
	if strings.Contains(out, "the train split holds fewer") {
		t.Errorf("the train split's epochs warned about:\n%s", out)
	}
}

// TestBlendSameDatasetTwiceWarned: a blend listing one dataset twice (to weigh it more)
// read every sample twice, one after the other (both entries' indices are built with
// the same seed), without a word; now a warning names both entries. Two datasets warn
// nothing.
func TestBlendSameDatasetTwiceWarned(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	base := t.TempDir()
	a := writeDataset(t, filepath.Join(base, "a"), randomDocs(rnd, 30), 1, shards.Uint16, nil, "fp")
	b := writeDataset(t, filepath.Join(base, "b"), randomDocs(rnd, 30), 1, shards.Uint16, nil, "fp")
	for _, tc := range []struct {
		data string
		warn bool
	}{{"0.5:" + a + ",0.5:" + a, true}, {"0.7:" + a + ",0.3:" + b, false}} {
		log, buf := logBuffer()
		d, err := Open(ctx, Options{Data: tc.data, SeqLen: 4, Seed: 1, NumSamples: [3]int64{20, 0, 0}, CacheDir: t.TempDir(), Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if got := strings.Contains(buf.String(), "a blend lists one dataset twice"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", tc.data, got, tc.warn, buf.String())
		}
	}
}

// TestBlendValidMarginNotWarned: a blend's valid split of two datasets of 22 samples
// each, asked for 44, reads each dataset's 22 once, but each index is sized for
// ceil(0.5·44·1.005) = 23 (GPT-NeoX's margin), two epochs: the warning that the
// samples repeat was given; now it is where the blend reads past an epoch (50).
func TestBlendValidMarginNotWarned(t *testing.T) {
	mk := func(name string, base int) string {
		docs := make([][]int, 20)
		for i := range docs {
			for j := 1; j <= 9; j++ {
				docs[i] = append(docs[i], base+9*i+j)
			}
		}
		return writeDataset(t, filepath.Join(t.TempDir(), name), docs, 2, shards.Uint16, []string{"train", "val"}, "fp")
	}
	a, b := mk("a", 0), mk("b", 1000)
	for _, order := range []string{"", OrderNeoX} {
		for _, tc := range []struct {
			asked int64
			warn  bool
		}{{44, false}, {50, true}} {
			log, buf := logBuffer()
			d, err := Open(ctx, Options{Data: "0.5:" + a + ",0.5:" + b, Order: order, SeqLen: 4, Seed: 1, NumSamples: [3]int64{100, tc.asked, 0}, CacheDir: t.TempDir(), Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i := range min(tc.asked, d.Valid.Len()) {
				seen[fmt.Sprint(d.Valid.Sample(i, nil))] = true
			}
			d.Close()
			if got := strings.Contains(buf.String(), "the valid split holds fewer samples than asked for"); got != tc.warn {
				t.Errorf("order %q, %d valid samples asked (%d distinct read): warned %v, want %v:\n%s", order, tc.asked, len(seen), got, tc.warn, buf.String())
			}
			if !tc.warn && len(seen) != int(tc.asked) {
				t.Errorf("order %q: %d distinct of %d read: they do repeat", order, len(seen), tc.asked)
			}
		}
	}
}
