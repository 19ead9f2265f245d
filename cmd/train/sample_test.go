package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/cli"
	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/storage"
)

// TestSamplePartOfPartitionedRun: a model trained on one part of a partitioned run
// (DIR/parts/part-00000-of-00002, whose character tokenizer tokenize run keeps once, at
// DIR) samples without --tokenizer, and export writes that tokenizer: they looked only
// in the part ("no tokenizer with the fingerprint ..."), as shards cat --decode did
// before it took shards.PartParent.
func TestSamplePartOfPartitionedRun(t *testing.T) {
	data, tok := makeCharDataset(t)
	run := filepath.Join(t.TempDir(), "run")
	part := filepath.Join(run, filepath.FromSlash(shards.PartDir(0, 2)))
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data, part); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(part, "chars.json"), filepath.Join(run, "chars.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runTrain(t, tinyArgs(part, out, "10")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample: exit %d, %q: %s", code, stdout, stderr)
	}
	// --data naming the part finds it too.
	code, stdout, stderr = runTrain(t, "sample", "--ckpt", out, "--data", part, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample --data PART: exit %d, %q: %s", code, stdout, stderr)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	checkExportedChars(t, hf, tok)
}

// TestSampleS3Dataset: a model trained on a dataset in S3 (here a part of a partitioned
// run, s3://BUCKET/run/parts/part-00000-of-00002, whose chars.json the run keeps at
// s3://BUCKET/run) samples and exports without --tokenizer, from the server the run
// read its data from (its s3_endpoint), and --data names another dataset in S3: they
// looked for the tokenizer files beside the data only in local directories ("no
// tokenizer with the fingerprint ...").
func TestSampleS3Dataset(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "") // only the run's s3_endpoint reaches the server
	data, tok := makeCharDataset(t)
	ctx := context.Background()
	bucket := "s3://" + srv.NewBucket(t)
	upload := func(loc string, skip string) {
		t.Helper()
		st, err := storage.Open(ctx, loc, storage.Options{S3Endpoint: srv.Endpoint})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || e.Name() == skip || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(data, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := cli.PutFile(ctx, st, e.Name(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	part := bucket + "/run/" + shards.PartDir(0, 2)
	upload(part, "chars.json")
	chars, err := os.ReadFile(filepath.Join(data, "chars.json"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := storage.Open(ctx, bucket+"/run", storage.Options{S3Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.PutFile(ctx, run, "chars.json", chars); err != nil {
		t.Fatal(err)
	}
	ds := bucket + "/ds"
	upload(ds, "")

	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runTrain(t, append(tinyArgs(part, out, "10"), "--s3-endpoint", srv.Endpoint)...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample: exit %d, %q: %s", code, stdout, stderr)
	}
	code, stdout, stderr = runTrain(t, "sample", "--ckpt", out, "--data", ds, "--s3-endpoint", srv.Endpoint, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample --data %s: exit %d, %q: %s", ds, code, stdout, stderr)
	}
	// Another dataset's characters: the refusal names the file in S3.
	other, err := storage.Open(ctx, bucket+"/other", storage.Options{S3Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.PutFile(ctx, other, "chars.json", []byte(`{"type": "char", "chars": ["x", "y"]}`)); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runTrain(t, "sample", "--ckpt", out, "--data", bucket+"/other", "--prompt", "to be", "--device", "ref")
	if code != 1 || !strings.Contains(stderr, bucket+"/other/chars.json has fingerprint") {
		t.Errorf("sample --data of other characters: exit %d, want 1 naming %s/other/chars.json: %s", code, bucket, stderr)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	checkExportedChars(t, hf, tok)
}
