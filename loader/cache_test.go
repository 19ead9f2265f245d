package loader

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/shards"
)

// TestIndexCacheKeys checks that the index file is reused for the same inputs and
// that a changed seed, sequence length, sample count, split, order or shard gets a
// file of its own.
func TestIndexCacheKeys(t *testing.T) {
	rnd := rand.New(rand.NewPCG(21, 22))
	docs := randomDocs(rnd, 120)
	dir := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	base := Options{Data: dir, SeqLen: 8, Seed: 1, Order: OrderNeoX, Split: "9,1,0", NumSamples: [3]int64{50, 0, 0}}
	file := func(o Options) string {
		t.Helper()
		d := openData(t, o)
		if len(d.IndexFiles) != 1 || !strings.HasPrefix(d.IndexFiles[0], filepath.Join(o.Data, cacheDirName)+"/") {
			t.Fatalf("index files %v", d.IndexFiles)
		}
		return d.IndexFiles[0]
	}
	f0 := file(base)
	st0, err := os.Stat(f0)
	if err != nil {
		t.Fatal(err)
	}
	log, buf := logBuffer()
	o := base
	o.Logger = log
	if f := file(o); f != f0 {
		t.Fatalf("same inputs, other file: %s vs %s", f, f0)
	}
	if st, _ := os.Stat(f0); !st.ModTime().Equal(st0.ModTime()) || !strings.Contains(buf.String(), "reused index cache") {
		t.Fatalf("the file was not reused: %s", buf)
	}
	seen := map[string]string{f0: "base"}
	for name, change := range map[string]func(*Options){
		"seed":    func(o *Options) { o.Seed = 2 },
		"seq_len": func(o *Options) { o.SeqLen = 9 },
		"samples": func(o *Options) { o.NumSamples[0] = 51 },
		"split":   func(o *Options) { o.Split = "8,2,0" },
		"order":   func(o *Options) { o.Order = OrderDefault },
	} {
		o := base
		change(&o)
		f := file(o)
		if prev, dup := seen[f]; dup {
			t.Errorf("%s changed, but the index file is %s's", name, prev)
		}
		seen[f] = name
	}
	// A changed shard (same sizes, other tokens): other checksums, other file.
	for _, d := range docs {
		for k := range d {
			d[k] = (d[k] + 1) % 60000
		}
	}
	dir2 := writeDataset(t, t.TempDir(), docs, 2, shards.Uint16, nil, "fp")
	o = base
	o.Data = dir2
	if f := file(o); filepath.Base(f) == filepath.Base(f0) {
		t.Errorf("a changed shard kept the index file name %s", filepath.Base(f))
	}
}

// TestIndexCacheCorrupt damages a cached index in several ways and checks that
// each is detected, logged and rebuilt, with the same samples.
func TestIndexCacheCorrupt(t *testing.T) {
	rnd := rand.New(rand.NewPCG(23, 24))
	dir := writeDataset(t, t.TempDir(), randomDocs(rnd, 100), 1, shards.Uint16, nil, "fp")
	o := Options{Data: dir, SeqLen: 6, Seed: 9, Order: OrderDefault, Split: "1", NumSamples: [3]int64{60, 0, 0}}
	ref := openData(t, o)
	f := ref.IndexFiles[0]
	good, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func([]byte) []byte{
		"flipped array bit": func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"flipped meta bit":  func(b []byte) []byte { b[cacheHeader+3*16+9] ^= 4; return b },
		"truncated":         func(b []byte) []byte { return b[:len(b)/2] },
		"empty":             func(b []byte) []byte { return nil },
		"bad magic":         func(b []byte) []byte { b[0] = 'X'; return b },
		"other version":     func(b []byte) []byte { b[8] = 99; return b },
		"other key":         func(b []byte) []byte { b[20] ^= 1; return b },
	} {
		if err := os.WriteFile(f, damage(slices.Clone(good)), 0o666); err != nil {
			t.Fatal(err)
		}
		log, buf := logBuffer()
		o.Logger = log
		d := openData(t, o)
		if !strings.Contains(buf.String(), "unusable") {
			t.Errorf("%s: not reported: %s", name, buf)
		}
		sameSource(t, name, d.Train, ref.Train)
		if b, _ := os.ReadFile(f); !slices.Equal(b, good) {
			t.Errorf("%s: the file was not rebuilt", name)
		}
	}
}

// TestIndexCacheFallback checks that data whose directory cannot take the index
// files has them under CacheDir, and that they are found there next time.
func TestIndexCacheFallback(t *testing.T) {
	rnd := rand.New(rand.NewPCG(25, 26))
	dir := writeDataset(t, t.TempDir(), randomDocs(rnd, 50), 1, shards.Uint16, nil, "fp")
	// A file where the index directory would go stands for read-only data (the
	// tests may run as root, for whom permissions do not stop a write).
	if err := os.WriteFile(filepath.Join(dir, cacheDirName), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	o := Options{Data: dir, SeqLen: 5, Seed: 2, NumSamples: [3]int64{30, 0, 0}, Split: "1", CacheDir: cache}
	d := openData(t, o)
	if len(d.IndexFiles) != 1 || !strings.HasPrefix(d.IndexFiles[0], filepath.Join(cache, cacheDirName)+"/") {
		t.Fatalf("index files %v, want under %s", d.IndexFiles, cache)
	}
	log, buf := logBuffer()
	o.Logger = log
	openData(t, o)
	if !strings.Contains(buf.String(), "reused index cache") || strings.Contains(buf.String(), "WARN") {
		t.Fatalf("the cache directory's file was not reused, or a warning was given: %s", buf)
	}
}

func TestDecodeCacheRejects(t *testing.T) {
	key := [32]byte{1}
	b, err := encodeCache(key, map[string]int{"a": 1}, []cacheArray{{4, make([]byte, 12)}, {1, []byte{1, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	meta, arrays, err := decodeCache("x", b, key, 2)
	if err != nil || string(meta) != `{"a":1}` || len(arrays) != 2 || len(arrays[0].data) != 12 || !slices.Equal(arrays[1].data, []byte{1, 2, 3}) {
		t.Fatalf("round trip: %q %v %v", meta, arrays, err)
	}
	if _, _, err := decodeCache("x", b, key, 3); err == nil {
		t.Error("wrong array count accepted")
	}
	if _, _, err := decodeCache("x", b, [32]byte{2}, 2); err == nil {
		t.Error("wrong key accepted")
	}
}

// FuzzDecodeCache feeds decodeCache arbitrary files with a valid checksum: it
// must never panic, and what it returns must lie within the file.
func FuzzDecodeCache(f *testing.F) {
	key := [32]byte{7}
	good, _ := encodeCache(key, map[string]int{"a": 1}, []cacheArray{{4, make([]byte, 12)}, {8, make([]byte, 16)}})
	f.Add(good[cacheHeader:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		b := make([]byte, cacheHeader+len(body))
		copy(b, good[:cacheHeader])
		copy(b[cacheHeader:], body)
		sum := sha256Sum(b[cacheHeader:])
		copy(b[48:80], sum[:])
		_, arrays, err := decodeCache("fuzz", b, key, 2)
		if err == nil {
			for _, a := range arrays {
				if a.elem < 1 || a.elem > 8 || len(a.data)%a.elem != 0 {
					t.Fatalf("array %d/%d", a.elem, len(a.data))
				}
			}
		}
	})
}
