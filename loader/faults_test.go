package loader

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
)

// TestBlendWeightOverflow: weights whose sum overflows float64 are refused as such, not
// as "sum to 0" (issue 15, item 13).
func TestBlendWeightOverflow(t *testing.T) {
	spec, err := ParseData("1e308:a,1e308:b")
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{spec.Train[0].Weight, spec.Train[1].Weight}
	if _, _, err := NeoXBlendWeights(w, 100); err == nil || !strings.Contains(err.Error(), "scale them down") {
		t.Errorf("NeoXBlendWeights = %v, want the overflow named", err)
	}
	if _, _, err := BlendNeoX(w, 100); err == nil || !strings.Contains(err.Error(), "scale them down") {
		t.Errorf("BlendNeoX = %v, want the overflow named", err)
	}
	if _, _, err := NeoXBlendWeights([]float64{1e307, 1e307}, 100); err != nil {
		t.Errorf("large but finite weights: %v", err)
	}
}

// writeVocabDataset writes one shard of docs with a manifest that says vocab ids.
func writeVocabDataset(t *testing.T, docs [][]int, vocab int) string {
	t.Helper()
	dir := writeDataset(t, t.TempDir(), docs, 1, shards.Uint16, nil, "fp")
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := shards.ReadManifest(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	m.Tokenizer.VocabSize = vocab
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenRefusesIDsOutsideVocab: a dataset whose ids reach past its manifest's
// vocabulary fails to open, in one line naming the shard and the byte offset, instead of
// failing the trainer mid-run (issue 15, item 4).
func TestOpenRefusesIDsOutsideVocab(t *testing.T) {
	docs := [][]int{make([]int, 100), make([]int, 100)}
	for i := range docs[1] {
		docs[1][i] = i % 50
	}
	docs[1][37] = 77 // document 1, token 37: byte (100+37)*2
	dir := writeVocabDataset(t, docs, 50)
	_, err := Open(ctx, Options{Data: dir, SeqLen: 8, NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir()})
	if err == nil || !errors.Is(err, shards.ErrVocab) {
		t.Fatalf("Open = %v, want ErrVocab", err)
	}
	for _, want := range []string{"data_00_text_document.bin: byte 274", "document 1, token 37", "token id 77", "[0,50)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The model's vocabulary, when smaller, is the limit.
	ok := writeVocabDataset(t, docs, 100)
	if _, err := Open(ctx, Options{Data: ok, SeqLen: 8, NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir(), VocabSize: 64}); !errors.Is(err, shards.ErrVocab) {
		t.Errorf("VocabSize 64 under ids up to 77: %v", err)
	}
	d := openData(t, Options{Data: ok, SeqLen: 8, NumSamples: [3]int64{10, 0, 0}, VocabSize: 128})
	if d.Train.Len() == 0 {
		t.Error("no samples")
	}
}

// TestOpenVerifiesLocalShards: a byte flipped in a local .bin is found when the data is
// opened (the sha256 against the manifest's), also when the file's modification time is
// set back; a file found good is not hashed again (issue 15, item 5).
func TestOpenVerifiesLocalShards(t *testing.T) {
	docs := randomDocs(rand.New(rand.NewPCG(1, 2)), 400)
	dir := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	cache := t.TempDir()
	o := Options{Data: dir, SeqLen: 8, NumSamples: [3]int64{10, 0, 0}, CacheDir: cache}
	d, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	entries, _ := filepath.Glob(filepath.Join(cache, "verified", "*.json"))
	if len(entries) != 2 {
		t.Fatalf("%d verified entries, want one per .bin", len(entries))
	}
	bin := filepath.Join(dir, "data_01_text_document.bin")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, 10)
	b[0] ^= 1
	f.WriteAt(b, 10)
	f.Close()
	os.Chtimes(bin, fi.ModTime(), fi.ModTime()) // same size and mtime: only ctime tells
	_, err = Open(ctx, o)
	if !errors.Is(err, shards.ErrChecksum) || !strings.Contains(err.Error(), "data_01_text_document.bin") {
		t.Fatalf("Open after a flipped byte = %v, want a checksum error naming the .bin", err)
	}
}
