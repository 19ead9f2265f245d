package shards

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"gptkit/storage"
)

// testStore is a directory store for the tests, with the semantics storage.Store promises:
// Create writes a temp file that Commit renames into place (IfAbsent/IfMatch checked
// under a lock), Abort removes it. remote=true hides LocalPath, as an S3 store would.
// failAfter (bytes written per object) and failCommit (key suffix) inject errors.
type testStore struct {
	root       string
	remote     bool
	failAfter  int64
	failCommit string
	mu         sync.Mutex
}

func newTestStore(t testing.TB) *testStore {
	return &testStore{root: t.TempDir(), failAfter: -1}
}

var errInjected = errors.New("injected failure")

func (s *testStore) path(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

func (s *testStore) Open(ctx context.Context, key string) (storage.Object, error) {
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &testObject{File: f, size: fi.Size()}, nil
}

type testObject struct {
	*os.File
	size int64
}

func (o *testObject) Size() int64 { return o.size }

func (s *testStore) Create(ctx context.Context, key string, opts ...storage.WriteOption) (storage.Writer, error) {
	tmpDir := filepath.Join(s.root, ".tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(tmpDir, "w-*")
	if err != nil {
		return nil, err
	}
	return &testWriter{s: s, key: key, f: f, o: storage.ApplyWriteOptions(opts)}, nil
}

type testWriter struct {
	s    *testStore
	key  string
	f    *os.File
	o    storage.WriteOptions
	n    int64
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if w.s.failAfter >= 0 && w.n+int64(len(p)) > w.s.failAfter {
		return 0, errInjected
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *testWriter) Commit() error {
	if w.done {
		return errors.New("commit after commit/abort")
	}
	if w.s.failCommit != "" && strings.HasSuffix(w.key, w.s.failCommit) {
		w.Abort()
		return errInjected
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.o.IfAbsent || w.o.IfMatch != "" {
		info, err := w.s.stat(w.key)
		exists := err == nil
		if (w.o.IfAbsent && exists) || (w.o.IfMatch != "" && (!exists || info.ETag != w.o.IfMatch)) {
			w.Abort()
			return storage.ErrPrecondition
		}
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	dst := w.s.path(w.key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	w.done = true
	return os.Rename(w.f.Name(), dst)
}

func (w *testWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	return os.Remove(w.f.Name())
}

func (s *testStore) Stat(ctx context.Context, key string) (storage.Info, error) { return s.stat(key) }

func (s *testStore) stat(key string) (storage.Info, error) {
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return storage.Info{}, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	if err != nil {
		return storage.Info{}, err
	}
	h := sha256.Sum256(data)
	return storage.Info{Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(h[:8])}, nil
}

func (s *testStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	var out []storage.Info
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".tmp" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(rel, prefix) {
			info, err := s.stat(rel)
			if err != nil {
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

func (s *testStore) Delete(ctx context.Context, key string) error {
	err := os.Remove(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (s *testStore) LocalPath(key string) (string, bool) {
	if s.remote {
		return "", false
	}
	return s.path(key), true
}

func (s *testStore) String() string { return s.root }

// keys lists every visible key (temp files excluded).
func (s *testStore) keys(t testing.TB) []string {
	t.Helper()
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

// tmpFiles counts leftover temp files.
func (s *testStore) tmpFiles(t testing.TB) int {
	ents, _ := os.ReadDir(filepath.Join(s.root, ".tmp"))
	return len(ents)
}

func (s *testStore) read(t testing.TB, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *testStore) write(t testing.TB, key string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(s.path(key)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(key), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeShard writes docs as a shard at key prefix and returns its info.
func writeShard(t testing.TB, st storage.Store, prefix string, dt DType, docs [][]int) ShardInfo {
	t.Helper()
	w, err := NewWriter(context.Background(), st, prefix, dt)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := w.AddDocument(d); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// testTokenizer is a tokenizer description for manifests.
func testTokenizer(vocab int) TokenizerInfo {
	return TokenizerInfo{Name: "test", Fingerprint: fmt.Sprintf("fp-%d", vocab), VocabSize: vocab, EODID: vocab - 1}
}

// writeDataset writes a dataset of one shard per docs list in dir and its manifest.
func writeDataset(t testing.TB, st storage.Store, dir string, tok TokenizerInfo, dt DType, shards ...[][]int) *Manifest {
	t.Helper()
	m := NewManifest(tok, dt, NewSource([]string{"test"}, "go test"))
	for i, docs := range shards {
		info := writeShard(t, st, join(dir, fmt.Sprintf("part%d_text_document", i)), dt, docs)
		if err := m.Add(dir, info); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(context.Background(), st, dir, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func equalInts(a, b []int) bool {
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

func mustEqualBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n got %x\nwant %x", what, got, want)
	}
}
