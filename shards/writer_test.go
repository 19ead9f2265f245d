package shards

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/storage"
)

func TestWriterTokenRange(t *testing.T) {
	for _, tc := range []struct {
		dt      DType
		bad     int
		mention string
	}{
		{Uint16, 65536, "id 65536"},
		{Uint16, -1, "id -1"},
		{Int32, 1 << 31, "id 2147483648"},
		{Int32, -5, "id -5"},
	} {
		t.Run(tc.dt.String()+"/"+tc.mention, func(t *testing.T) {
			st := newTestStore(t)
			w, err := NewWriter(context.Background(), st, "s", tc.dt)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if err := w.AddDocument([]int{1, 2}); err != nil {
				t.Fatal(err)
			}
			err = w.AddDocument([]int{3, 4, tc.bad, 5})
			if !errors.Is(err, ErrTokenRange) || !strings.Contains(err.Error(), "document 1, token 2") || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v", err)
			}
			// A large document takes the check-first path; it must fail the same way.
			big := make([]int, writeBufSize)
			big[len(big)-1] = tc.bad
			if err := w.AddDocument(big); !errors.Is(err, ErrTokenRange) {
				t.Fatalf("big document: err = %v", err)
			}
			// The rejected documents left nothing behind; the writer goes on.
			if err := w.AddDocument([]int{6}); err != nil {
				t.Fatal(err)
			}
			info, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(st.path("s"))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if info.Documents != 2 || r.Len() != 2 || !equalInts(r.Tokens(0), []int{1, 2}) || !equalInts(r.Tokens(1), []int{6}) {
				t.Fatalf("after rejected documents: %+v, docs %v %v", info, r.Tokens(0), r.Tokens(1))
			}
		})
	}
}

func TestWriterRejectsDType(t *testing.T) {
	if _, err := NewWriter(context.Background(), newTestStore(t), "s", Int64); !errors.Is(err, ErrBadDType) {
		t.Fatalf("err = %v", err)
	}
}

// TestWriterRoundTrip: random documents, some larger than the write buffer, read back.
func TestWriterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []DType{Uint16, Int32} {
		st := newTestStore(t)
		var docs [][]int
		for i := 0; i < 300; i++ {
			n := rng.IntN(3000)
			if i%97 == 5 {
				n = writeBufSize/dt.Size() + rng.IntN(writeBufSize) // spans buffers
			}
			d := make([]int, n)
			for k := range d {
				d[k] = rng.IntN(int(min(dt.MaxID(), 200000)) + 1)
			}
			docs = append(docs, d)
		}
		info := writeShard(t, st, "rt", dt, docs)
		r, err := Open(st.path("rt.idx"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Len() != len(docs) || int64(r.Len()) != info.Documents || r.NumTokens() != info.Tokens {
			t.Fatalf("%s: %d docs %d tokens, info %+v", dt, r.Len(), r.NumTokens(), info)
		}
		for i, d := range docs {
			if !equalInts(r.Tokens(i), d) {
				t.Fatalf("%s: doc %d differs", dt, i)
			}
		}
		r.Close()
	}
}

// TestWriterCrashSafety: an aborted or failing writer leaves nothing visible.
func TestWriterCrashSafety(t *testing.T) {
	ctx := context.Background()
	docs := [][]int{{1, 2, 3}, make([]int, 3*writeBufSize/2)}

	t.Run("abort mid-shard, dir store", func(t *testing.T) {
		root := t.TempDir()
		st, err := storage.Open(ctx, root, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWriter(ctx, st, "data/x_text_document", Uint16)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if err := w.AddDocument(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		infos, err := st.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 0 {
			t.Fatalf("after Abort the store lists %v", infos)
		}
		if _, err := Open(filepath.Join(root, "data/x_text_document")); !errors.Is(err, ErrMissing) {
			t.Fatalf("Open after Abort: %v", err)
		}
		if _, err := w.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Close after Abort: %v", err)
		}
		if err := w.AddDocument([]int{1}); !errors.Is(err, ErrClosed) {
			t.Fatalf("AddDocument after Abort: %v", err)
		}
	})

	t.Run("write fails", func(t *testing.T) {
		st := newTestStore(t)
		st.failAfter = writeBufSize / 2
		w, err := NewWriter(ctx, st, "x", Uint16)
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for _, d := range docs {
			if werr = w.AddDocument(d); werr != nil {
				break
			}
		}
		if !errors.Is(werr, errInjected) {
			t.Fatalf("AddDocument: %v", werr)
		}
		if _, err := w.Close(); !errors.Is(err, errInjected) {
			t.Fatalf("Close: %v", err)
		}
		if k := st.keys(t); len(k) != 0 || st.tmpFiles(t) != 0 {
			t.Fatalf("left %v and %d temp files", k, st.tmpFiles(t))
		}
	})

	t.Run("idx commit fails", func(t *testing.T) {
		st := newTestStore(t)
		st.failCommit = ".idx"
		w, err := NewWriter(ctx, st, "x", Uint16)
		if err != nil {
			t.Fatal(err)
		}
		w.AddDocument([]int{1, 2})
		if _, err := w.Close(); !errors.Is(err, errInjected) {
			t.Fatalf("Close: %v", err)
		}
		if k := st.keys(t); len(k) != 0 {
			t.Fatalf("a failed .idx left %v (the committed .bin must be removed)", k)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		st := newTestStore(t)
		cctx, cancel := context.WithCancel(ctx)
		w, err := NewWriter(cctx, st, "x", Uint16)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		err = w.AddDocument(make([]int, 2*writeBufSize))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("AddDocument after cancel: %v", err)
		}
		w.Close()
		if k := st.keys(t); len(k) != 0 {
			t.Fatalf("left %v", k)
		}
	})
}

// TestOpenStoreRemote: a store without local files is read through a verified cache copy.
func TestOpenStoreRemote(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	info := writeShard(t, st, "d/s", Uint16, goldenU16)
	st.remote = true
	cache := t.TempDir()
	r, err := OpenStore(ctx, st, "d/s", cache, info.BinSHA256, info.IdxSHA256)
	if err != nil {
		t.Fatal(err)
	}
	if !equalInts(r.Tokens(2), goldenU16[2]) || !strings.HasPrefix(r.Name(), st.String()) {
		t.Fatalf("read %v from %s", r.Tokens(2), r.Name())
	}
	r.Close()
	// A wrong checksum refuses the copy.
	other := newTestStore(t)
	other.remote = true
	writeShard(t, other, "d/s", Uint16, goldenU16[:2])
	if _, err := OpenStore(ctx, other, "d/s", t.TempDir(), info.BinSHA256, info.IdxSHA256); !errors.Is(err, ErrChecksum) {
		t.Fatalf("wrong checksum: %v", err)
	}
	if _, err := OpenStore(ctx, other, "d/missing", t.TempDir(), info.BinSHA256, info.IdxSHA256); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing: %v", err)
	}
}

// TestEncodeTokens: the unrolled encoder matches a plain loop and finds the first bad id
// at every position.
func TestEncodeTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []DType{Uint16, Int32} {
		for n := 0; n < 40; n++ {
			ids := make([]int, n)
			for i := range ids {
				ids[i] = rng.IntN(int(dt.MaxID()) + 1)
			}
			if n > 0 {
				ids[0], ids[n-1] = int(dt.MaxID()), 0
			}
			dst := make([]byte, n*dt.Size())
			if bad := encodeTokens(dst, ids, dt); bad != -1 {
				t.Fatalf("%s n=%d: bad = %d", dt, n, bad)
			}
			if got := appendDecoded(nil, dst, dt); !equalInts(got, ids) && n > 0 {
				t.Fatalf("%s n=%d: decoded %v, want %v", dt, n, got, ids)
			}
			for pos := 0; pos < n; pos++ {
				for _, v := range []int{-1, int(dt.MaxID()) + 1, -1 << 40} {
					bad := append([]int{}, ids...)
					bad[pos] = v
					if n > pos+1 {
						bad[n-1] = -7 // a later bad id must not win
					}
					if got := encodeTokens(dst, bad, dt); got != pos {
						t.Fatalf("%s n=%d: bad id %d at %d found at %d", dt, n, v, pos, got)
					}
				}
			}
		}
	}
}

// TestWriterInt32Parts: a document given as int32 parts (AddDocumentInt32) writes the
// same shard as the same ids given whole as []int, small documents and ones larger
// than the write buffer alike, with parts of every size; and a bad id in a later part is
// refused naming its place in the whole document.
func TestWriterInt32Parts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var docs [][]int
	for _, n := range []int{0, 1, 7, 1000, writeBufSize/2 + 3, 3*writeBufSize + 17} {
		doc := make([]int, n)
		for i := range doc {
			doc[i] = rng.IntN(50257)
		}
		docs = append(docs, doc)
	}
	for _, dt := range []DType{Uint16, Int32} {
		st := newTestStore(t)
		whole, err := NewWriter(context.Background(), st, "whole", dt)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := NewWriter(context.Background(), st, "parts", dt)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			if err := whole.AddDocument(doc); err != nil {
				t.Fatal(err)
			}
			var ps [][]int32
			for rest := doc; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(writeBufSize))
				p := make([]int32, k)
				for i, id := range rest[:k] {
					p[i] = int32(id)
				}
				ps, rest = append(ps, p), rest[k:]
			}
			if err := parts.AddDocumentInt32(ps...); err != nil {
				t.Fatal(err)
			}
		}
		bad := parts.AddDocumentInt32([]int32{1, 2}, []int32{3, -1})
		if !errors.Is(bad, ErrTokenRange) || !strings.Contains(bad.Error(), "token 3: id -1") {
			t.Errorf("%s: bad id: %v", dt, bad)
		}
		a, err := whole.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err := parts.Close()
		if err != nil {
			t.Fatal(err)
		}
		if a.BinSHA256 != b.BinSHA256 || a.Documents != b.Documents || a.Tokens != b.Tokens {
			t.Errorf("%s: whole %+v, parts %+v", dt, a, b)
		}
	}
}
