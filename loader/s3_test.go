package loader

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/shards"
)

// TestOpenS3 reads a dataset from a real MinIO through Open: the shards are served
// from verified local copies, the index goes to CacheDir (not to the bucket) and is
// reused, and the samples equal those of the same dataset on disk. A blend of the
// S3 dataset and a local one works too.
func TestOpenS3(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	rnd := rand.New(rand.NewPCG(51, 52))
	docs := randomDocs(rnd, 120)
	loc := "s3://" + srv.NewBucket(t) + "/sets/one"
	writeDataset(t, loc, docs, 3, shards.Uint16, nil, "fp")
	local := writeDataset(t, t.TempDir(), docs, 3, shards.Uint16, nil, "fp")

	cache := t.TempDir()
	o := Options{Data: loc, SeqLen: 7, Seed: 8, Order: OrderNeoX, Split: "9,1,0", NumSamples: [3]int64{100, 10, 0}, CacheDir: cache, S3Endpoint: srv.Endpoint}
	d := openData(t, o)
	for _, f := range d.IndexFiles {
		if !strings.HasPrefix(f, filepath.Join(cache, cacheDirName)+"/") {
			t.Fatalf("index file %s not under the cache directory", f)
		}
	}
	o2 := o
	o2.Data, o2.CacheDir = local, t.TempDir()
	ref := openData(t, o2)
	sameSource(t, "s3 train", d.Train, ref.Train)
	sameSource(t, "s3 valid", d.Valid, ref.Valid)
	if d.Tokenizer.Fingerprint != "fp" {
		t.Fatalf("tokenizer %+v", d.Tokenizer)
	}
	// Shard copies are in the cache directory.
	var bins int
	filepath.WalkDir(cache, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".bin") {
			bins++
		}
		return nil
	})
	if bins != 3 {
		t.Fatalf("%d cached .bin copies, want 3", bins)
	}

	log, buf := logBuffer()
	o.Logger = log
	openData(t, o)
	if strings.Count(buf.String(), "reused index cache") != 2 {
		t.Fatalf("the cached indices were not reused: %s", buf)
	}

	b := openData(t, Options{Data: "0.6:" + loc + ",0.4:" + local, SeqLen: 7, Seed: 8, Split: "9,1,0", NumSamples: [3]int64{100, 0, 0}, CacheDir: cache, S3Endpoint: srv.Endpoint})
	if b.Train.Len() < 100 {
		t.Fatalf("blend of %d samples", b.Train.Len())
	}
}

// TestOpenS3ParentHint: --data of the folder above S3 datasets (prep NAME -d
// s3://B/P makes s3://B/P/NAME) names them, as a local directory's error does (it said
// only that the stage making the dataset did not complete).
func TestOpenS3ParentHint(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	docs := randomDocs(rand.New(rand.NewPCG(53, 54)), 20)
	parent := "s3://" + srv.NewBucket(t) + "/sets"
	writeDataset(t, parent+"/one", docs, 1, shards.Uint16, nil, "fp")
	_, err := Open(t.Context(), Options{Data: parent, SeqLen: 7, Split: "9,1,0", NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir(), S3Endpoint: srv.Endpoint})
	if err == nil || !strings.Contains(err.Error(), "pass one of them, e.g. --data "+parent+"/one") {
		t.Fatalf("--data %s: %v", parent, err)
	}
	// A folder with nothing below: no hint.
	_, err = Open(t.Context(), Options{Data: parent + "/none", SeqLen: 7, Split: "9,1,0", NumSamples: [3]int64{10, 0, 0}, CacheDir: t.TempDir(), S3Endpoint: srv.Endpoint})
	if err == nil || strings.Contains(err.Error(), "pass one of them") {
		t.Fatalf("--data %s/none: %v", parent, err)
	}
}
