package storage

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
)

// countingOpenStore counts Opens (downloads) of a etagMemStore.
type countingOpenStore struct {
	*etagMemStore
	opens atomic.Int64
}

func (s *countingOpenStore) Open(ctx context.Context, key string) (Object, error) {
	s.opens.Add(1)
	return s.etagMemStore.Open(ctx, key)
}

// TestFetchWithSHAThenWithoutRedownloads: the loader (train) fetches shards with the
// manifest's SHA-256, which skips Stat; the sidecar still records the version's ETag, so
// `shards verify` (no SHA-256: cachedReads) finds the copy train maps and downloads
// nothing (it compared the store's ETag with "" and downloaded every shard again).
func TestFetchWithSHAThenWithoutRedownloads(t *testing.T) {
	st := &countingOpenStore{etagMemStore: newETagMemStore("mem://train-then-verify")}
	data := bytes.Repeat([]byte("tok"), 100_000)
	st.set("ds/a.bin", data)
	cache := t.TempDir()
	if _, err := Fetch(ctx, st, "ds/a.bin", cache, sha(data)); err != nil { // train
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, st, "ds/a.bin", cache, ""); err != nil { // shards verify
		t.Fatal(err)
	}
	if n := st.opens.Load(); n != 1 {
		t.Fatalf("the unchanged object was downloaded %d times, want once (the copy train fetched has no ETag in its sidecar)", n)
	}
}
