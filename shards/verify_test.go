package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"gptkit/storage"
)

// TestVerifyCatches: each corruption of a good dataset is reported with its sentinel and
// the damaged file's name.
func TestVerifyCatches(t *testing.T) {
	ctx := context.Background()
	const shard = "ds/part1_text_document"
	le := binary.LittleEndian
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, st *testStore)
		sentinel error
		file     string // suffix of the problem's file
	}{
		{"flipped .bin byte", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".bin", func(b []byte) []byte { b[3] ^= 0x10; return b })
		}, ErrChecksum, ".bin"},
		{"truncated .bin", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".bin", func(b []byte) []byte { return b[:len(b)-2] })
		}, ErrTruncated, ".bin"},
		{"truncated .idx", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte { return b[:len(b)-5] })
		}, ErrTruncated, ".idx"},
		{"bad magic", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte { b[0] = 'X'; return b })
		}, ErrBadMagic, ".idx"},
		{"bad version", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte { b[9] = 3; return b })
		}, ErrBadVersion, ".idx"},
		{"bad dtype", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte { b[17] = 6; return b })
		}, ErrBadDType, ".idx"},
		{"non-monotone doc_idx", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte {
				n := int(le.Uint64(b[18:]))
				le.PutUint64(b[HeaderSize+12*n+8*2:], 0) // doc_idx[2] = 0 after doc_idx[1] = 1
				return b
			})
		}, ErrCorrupt, ".idx"},
		{"pointer mismatch", func(t *testing.T, st *testStore) {
			edit(t, st, shard+".idx", func(b []byte) []byte {
				n := int(le.Uint64(b[18:]))
				le.PutUint64(b[HeaderSize+4*n+8:], 1) // pointers[1]
				return b
			})
		}, ErrCorrupt, ".idx"},
		{"sizes changed consistently", func(t *testing.T, st *testStore) {
			// Rewrite the index with one token fewer in the first document: structurally
			// fine, but the .bin is too long and the counts differ from the manifest.
			edit(t, st, shard+".idx", func(b []byte) []byte {
				ix, err := ParseIndex("x", b)
				if err != nil {
					t.Fatal(err)
				}
				sizes := []int32{}
				for i := 0; i < ix.Len(); i++ {
					sizes = append(sizes, int32(ix.Size(i)))
				}
				sizes[0]--
				var out strings.Builder
				WriteIndex(&out, Uint16, sizes, nil)
				return []byte(out.String())
			})
		}, ErrMismatch, ".idx"},
		{"missing .bin", func(t *testing.T, st *testStore) {
			os.Remove(st.path(shard + ".bin"))
		}, ErrMissing, ".bin"},
		{"missing .idx", func(t *testing.T, st *testStore) {
			os.Remove(st.path(shard + ".idx"))
		}, ErrMissing, ".idx"},
		{"counts differ from manifest", func(t *testing.T, st *testStore) {
			m, err := ReadManifest(ctx, st, "ds")
			if err != nil {
				t.Fatal(err)
			}
			m.Shards[1].Tokens += 3
			m.Tokens += 3
			if err := WriteManifest(ctx, st, "ds", m); err != nil {
				t.Fatal(err)
			}
		}, ErrMismatch, ".idx"},
		{"missing manifest", func(t *testing.T, st *testStore) {
			os.Remove(st.path("ds/manifest.json"))
		}, ErrMissing, "manifest.json"},
		{"broken manifest", func(t *testing.T, st *testStore) {
			edit(t, st, "ds/manifest.json", func(b []byte) []byte { return b[:len(b)/2] })
		}, ErrBadManifest, "manifest.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestStore(t)
			writeDataset(t, st, "ds", testTokenizer(65536), Uint16, goldenU16[:2], goldenU16, goldenU16[2:])
			if probs, err := Verify(ctx, st, "ds"); err != nil || len(probs) != 0 {
				t.Fatalf("clean dataset: %v %v", probs, err)
			}
			tc.damage(t, st)
			probs, err := Verify(ctx, st, "ds")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range probs {
				// The message names the file by its full name, as the problem does:
				// a bare key would leave the user to guess the directory.
				if !strings.Contains(p.Err.Error(), p.File) {
					t.Errorf("problem in %s: message does not name it: %v", p.File, p.Err)
				}
				if errors.Is(p.Err, tc.sentinel) && strings.HasSuffix(p.File, tc.file) && !p.Warning {
					found = true
				}
			}
			if !found {
				var msgs []string
				for _, p := range probs {
					msgs = append(msgs, p.File+": "+p.String())
				}
				t.Fatalf("no %v problem in %s among:\n%s", tc.sentinel, tc.file, strings.Join(msgs, "\n"))
			}
		})
	}
}

func TestVerifyWarnings(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, goldenU16)
	// A stray shard from an interrupted run.
	writeShard(t, st, "ds/stray", Uint16, goldenU16[:1])
	probs, err := Verify(ctx, st, "ds")
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 2 || !probs[0].Warning || !strings.Contains(probs[0].String(), "not named") {
		t.Fatalf("stray files: %v", probs)
	}

	// A GPT-NeoX merged shard: an error, or a warning with AllowMergedDocIdx.
	st = newTestStore(t)
	for _, ext := range []string{".bin", ".idx"} {
		b, err := os.ReadFile(golden("neox_merged_u16" + ext))
		if err != nil {
			t.Fatal(err)
		}
		st.write(t, "neox/merged"+ext, b)
	}
	probs, _ = VerifyShard(ctx, st, "neox/merged", nil, 0)
	if len(probs) != 1 || probs[0].Warning || !errors.Is(probs[0].Err, ErrMergedDocIdx) {
		t.Fatalf("merged without option: %v", probs)
	}
	probs, _ = VerifyShard(ctx, st, "neox/merged", nil, 0, AllowMergedDocIdx())
	if len(probs) != 1 || !probs[0].Warning || !errors.Is(probs[0].Err, ErrMergedDocIdx) {
		t.Fatalf("merged with option: %v", probs)
	}
}

func edit(t *testing.T, st *testStore, key string, f func([]byte) []byte) {
	t.Helper()
	st.write(t, key, f(st.read(t, key)))
}

// TestVerifyBareNegativeID: a bare shard (no manifest, no vocabulary) of a signed dtype
// with a negative id (a flipped sign byte) is a problem; `shards verify PREFIX` said
// "ok", and the trainer then read the id.
func TestVerifyBareNegativeID(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	var idx strings.Builder
	if err := WriteIndex(&idx, Int32, []int32{1, 2}, nil); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(st.path("b"), 0o777)
	os.WriteFile(st.path("b/x.idx"), []byte(idx.String()), 0o644)
	le := binary.LittleEndian
	bin := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 7), 5), 0xffffffff)
	os.WriteFile(st.path("b/x.bin"), bin, 0o644)
	probs, err := VerifyShard(ctx, st, "b/x", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || !errors.Is(probs[0].Err, ErrVocab) || !errors.Is(probs[0].Err, ErrNegativeID) || !strings.Contains(probs[0].Err.Error(), "x.bin: byte 8 (document 1, token 1): token id -1 is negative") {
		t.Fatalf("VerifyShard = %v, want the negative id at byte 8", probs)
	}
	le.PutUint32(bin[8:], 9)
	os.WriteFile(st.path("b/x.bin"), bin, 0o644)
	if probs, err := VerifyShard(ctx, st, "b/x", nil, 0); err != nil || len(probs) != 0 {
		t.Fatalf("good bare shard: %v %v", probs, err)
	}
}

// TestSwappedFiles: a shard whose .bin and .idx were swapped (a rename gone wrong) is
// named as such, by verify and on open, with the renames that fix it; it read as an
// .idx to restore or rewrite.
func TestSwappedFiles(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, goldenU16[:2], goldenU16)
	const shard = "ds/part1_text_document"
	bin, _ := os.ReadFile(st.path(shard + ".bin"))
	idx, _ := os.ReadFile(st.path(shard + ".idx"))
	os.WriteFile(st.path(shard+".bin"), idx, 0o644)
	os.WriteFile(st.path(shard+".idx"), bin, 0o644)
	want := "HINT: the shard's two files are swapped: " + st.path(shard) + ".bin holds the index"
	probs, err := Verify(ctx, st, "ds")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range probs {
		found = found || (errors.Is(p.Err, ErrBadMagic) && strings.Contains(p.Err.Error(), want))
	}
	if !found {
		t.Errorf("Verify: no problem saying %q among %v", want, probs)
	}
	if d, err := OpenDataset(ctx, st, "ds", ""); err == nil || !strings.Contains(err.Error(), want) {
		if d != nil {
			d.Close()
		}
		t.Errorf("OpenDataset: %v, want %q", err, want)
	}
}

// TestVerifyBareInt64MaxThenNegative: on a bare int64 shard, an id of 2^63-1 (int64's
// largest) is no negative id; it was taken for the first bad id and then dropped, so the
// negative id after it went unreported.
func TestVerifyBareInt64MaxThenNegative(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	var idx strings.Builder
	if err := WriteIndex(&idx, Int64, []int32{3}, nil); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(st.path("b"), 0o777)
	os.WriteFile(st.path("b/x.idx"), []byte(idx.String()), 0o644)
	le := binary.LittleEndian
	bin := le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 7), 1<<63-1), 1<<64-2) // 7, 2^63-1, -2
	os.WriteFile(st.path("b/x.bin"), bin, 0o644)
	probs, err := VerifyShard(ctx, st, "b/x", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || !errors.Is(probs[0].Err, ErrNegativeID) || !strings.Contains(probs[0].Err.Error(), "x.bin: byte 16 (document 0, token 2): token id -2 is negative") {
		t.Fatalf("VerifyShard = %v, want the negative id at byte 16", probs)
	}
}

// openCounter counts the Opens of each key (a HEAD and a GET each on S3).
type openCounter struct {
	storage.Store
	mu    sync.Mutex
	opens map[string]int
}

func (c *openCounter) Open(ctx context.Context, key string) (storage.Object, error) {
	c.mu.Lock()
	c.opens[key]++
	c.mu.Unlock()
	return c.Store.Open(ctx, key)
}

// TestVerifyOpensIndexOnce: Verify opens each shard's .idx once, a valid one and one
// that is no index alike; a valid one was opened twice (its head, then all of it), one
// GET more per shard on S3.
func TestVerifyOpensIndexOnce(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, goldenU16, goldenU16)
	os.WriteFile(st.path("ds/part1_text_document.idx"), make([]byte, 1000), 0o644)
	c := &openCounter{Store: st, opens: map[string]int{}}
	probs, err := Verify(ctx, c, "ds")
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) == 0 || !errors.Is(probs[0].Err, ErrChecksum) || !strings.HasSuffix(probs[0].File, "part1_text_document.idx") {
		t.Fatalf("problems %v, want part1's .idx checksum first", probs)
	}
	for _, key := range []string{"ds/part0_text_document.idx", "ds/part1_text_document.idx", "ds/part0_text_document.bin"} {
		if c.opens[key] != 1 {
			t.Errorf("%s opened %d times, want 1", key, c.opens[key])
		}
	}
}

// TestVerifyDoesNotLoadANonIndex: an .idx that is no index (the .bin in its place:
// gigabytes) is hashed as a stream; it was read into memory whole.
func TestVerifyDoesNotLoadANonIndex(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, goldenU16)
	const shard = "ds/part0_text_document"
	os.WriteFile(st.path(shard+".idx"), make([]byte, 64<<20), 0o644)
	dir, err := storage.Open(ctx, st.root, storage.Options{}) // the test store reads whole files to list them
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	probs, err := Verify(ctx, dir, "ds")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) == 0 || !errors.Is(probs[0].Err, ErrChecksum) {
		t.Fatalf("problems %v, want the .idx's checksum first", probs)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("Verify allocated %d MiB for a 64 MiB non-index", got>>20)
	}
}
