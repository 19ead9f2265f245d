package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"gptkit/internal/miniotest"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFetchDirStoreUsesFileInPlace(t *testing.T) {
	st := mustOpen(t, t.TempDir(), Options{})
	put(t, st, "a/b.bin", []byte("hello"))
	cache := t.TempDir()
	p, err := Fetch(ctx, st, "a/b.bin", cache, "not-checked")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := st.LocalPath("a/b.bin"); p != want {
		t.Fatalf("Fetch = %s, want the store's own file %s", p, want)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Fatalf("Fetch from a directory store wrote to the cache: %v", entries)
	}
	if _, err := Fetch(ctx, st, "nope", cache, ""); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Fetch(missing): %v, want ErrNotExist", err)
	}
}

func minioStore(t *testing.T, opt Options) Store {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	if opt.PartSize == 0 {
		opt.PartSize = MinPartSize
	}
	return mustOpen(t, "s3://"+srv.NewBucket(t)+"/pre", opt)
}

func TestFetchVerifiesAndReuses(t *testing.T) {
	counts, hc := newCountingClient()
	st := minioStore(t, Options{HTTPClient: hc})
	data := randBytes(3<<20, 11)
	put(t, st, "shards/0.bin", data)
	cache := t.TempDir()
	gets := func() int64 { return counts.n("GET") }

	p, err := Fetch(ctx, st, "shards/0.bin", cache, sha(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "cached copy", got, data)
	if gets() != 1 {
		t.Fatalf("%d GETs for the first Fetch, want 1", gets())
	}

	// Reuse: the sidecar matches, so no request at all.
	heads := counts.n("HEAD")
	if p2, err := Fetch(ctx, st, "shards/0.bin", cache, sha(data)); err != nil || p2 != p {
		t.Fatalf("second Fetch = %s, %v; want %s", p2, err, p)
	}
	if gets() != 1 || counts.n("HEAD") != heads {
		t.Fatalf("second Fetch with a SHA-256 made requests (GETs %d, HEADs %d→%d)", gets(), heads, counts.n("HEAD"))
	}

	// A file touched but intact is re-hashed, not downloaded.
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, st, "shards/0.bin", cache, sha(data)); err != nil || gets() != 1 {
		t.Fatalf("Fetch of a rewritten intact copy: %v, GETs %d (want 1)", err, gets())
	}

	// A corrupted copy (same size) is downloaded again.
	bad := append([]byte(nil), data...)
	bad[12345] ^= 1
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, st, "shards/0.bin", cache, sha(data)); err != nil {
		t.Fatal(err)
	}
	if gets() != 2 {
		t.Fatalf("%d GETs after corrupting the cache, want 2", gets())
	}
	got, _ = os.ReadFile(p)
	sameBytes(t, "re-downloaded copy", got, data)

	// A wrong SHA-256 fails and leaves no file under the cache path.
	put(t, st, "shards/1.bin", []byte("other"))
	_, err = Fetch(ctx, st, "shards/1.bin", cache, sha([]byte("expected")))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Fetch with a wrong SHA-256: %v, want ErrChecksum", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(p), "1.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a copy that failed verification was published: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Fatalf("cache directory holds %d entries, want only 0.bin (no temp files)", len(entries))
	}

	// Missing keys report ErrNotExist.
	if _, err := Fetch(ctx, st, "nope", cache, ""); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Fetch(missing): %v, want ErrNotExist", err)
	}
}

func TestFetchWithoutSHAFollowsETag(t *testing.T) {
	counts, hc := newCountingClient()
	st := minioStore(t, Options{HTTPClient: hc})
	put(t, st, "m.json", []byte("v1"))
	cache := t.TempDir()
	read := func() string {
		t.Helper()
		p, err := Fetch(ctx, st, "m.json", cache, "")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		return string(b)
	}
	if got := read(); got != "v1" {
		t.Fatalf("got %q", got)
	}
	if got := read(); got != "v1" || counts.n("GET") != 1 {
		t.Fatalf("second Fetch: %q, %d GETs (want 1: a HEAD shows the copy is current)", got, counts.n("GET"))
	}
	put(t, st, "m.json", []byte("v2"))
	if got := read(); got != "v2" || counts.n("GET") != 2 {
		t.Fatalf("Fetch after the object changed: %q, %d GETs (want v2, 2)", got, counts.n("GET"))
	}
}

func TestFetchConcurrentDownloadsOnce(t *testing.T) {
	counts, hc := newCountingClient()
	st := minioStore(t, Options{HTTPClient: hc})
	data := randBytes(1<<20, 12)
	put(t, st, "x.bin", data)
	cache := t.TempDir()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Fetch(ctx, st, "x.bin", cache, sha(data)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if counts.n("GET") != 1 {
		t.Fatalf("4 concurrent Fetches made %d GETs, want 1", counts.n("GET"))
	}
}

func TestFetchCacheSeparatesStores(t *testing.T) {
	a, b := minioStore(t, Options{}), minioStore(t, Options{})
	put(t, a, "k", []byte("from a"))
	put(t, b, "k", []byte("from b"))
	cache := t.TempDir()
	pa, err := Fetch(ctx, a, "k", cache, "")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Fetch(ctx, b, "k", cache, "")
	if err != nil {
		t.Fatal(err)
	}
	if pa == pb {
		t.Fatalf("two stores share the cache path %s", pa)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("GPTKIT_CACHE", "/x/cache")
	if got := DefaultCacheDir(); got != "/x/cache/storage" {
		t.Fatalf("DefaultCacheDir = %s", got)
	}
	if runtime.GOOS != "linux" {
		return
	}
	t.Setenv("GPTKIT_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/y")
	if got := DefaultCacheDir(); got != "/y/gptkit/storage" {
		t.Fatalf("DefaultCacheDir = %s", got)
	}
}

// TestFetchCacheDirError: a cache directory that cannot be made is named, with where
// it comes from (the error said "check the cache directory, $GPTKIT_CACHE" to a user
// who had passed --cache-dir, naming neither the directory nor the flag).
func TestFetchCacheDirError(t *testing.T) {
	st := minioStore(t, Options{})
	put(t, st, "shards/0.bin", []byte("abc"))
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(file, "cache") // under a file: mkdir fails, even as root
	_, err := Fetch(ctx, st, "shards/0.bin", cache, "")
	want := "(check the cache directory " + cache + ": --cache-dir, by default $GPTKIT_CACHE/storage, else ~/.cache/gptkit/storage)"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("got %v, want ...%s", err, want)
	}
}
