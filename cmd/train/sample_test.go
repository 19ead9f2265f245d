package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// TestSampleBlend: a model trained on a blend of two datasets ("W1:DIR1,W2:DIR2", or a
// blend file) with a character tokenizer (chars.json beside each) samples and exports
// without --tokenizer, finding the files beside either dataset: the whole blend string
// was taken for one directory ("the dataset directory 0.5:... is not there"). Datasets
// whose files no longer agree are named: the model's tokenizer is used with a
// warning, or, where neither is the model's, the command fails naming the two.
func TestSampleBlend(t *testing.T) {
	a, tok := makeCharDataset(t)
	b, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runTrain(t, tinyArgs("0.5:"+a+",0.5:"+b, out, "10")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	sample := func(args ...string) (int, string, string) {
		t.Helper()
		return runTrain(t, append([]string{"sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref"}, args...)...)
	}
	if code, stdout, stderr := sample(); code != 0 || !strings.HasPrefix(stdout, "to be") || strings.Contains(stderr, "WARN") {
		t.Fatalf("sample: exit %d, %q: %s", code, stdout, stderr)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	checkExportedChars(t, hf, tok)

	// A blend file naming the datasets relative to itself; the files beside the
	// second dataset only.
	dir := t.TempDir()
	blend := filepath.Join(dir, "blend.yaml")
	relA, _ := filepath.Rel(dir, a)
	relB, _ := filepath.Rel(dir, b)
	if err := os.WriteFile(blend, []byte("datasets:\n  - {path: "+relA+", weight: 0.5}\n  - {path: "+relB+", weight: 0.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(a, "chars.json")); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := sample("--data", blend); code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample --data %s: exit %d, %q: %s", blend, code, stdout, stderr)
	}

	// The datasets' files differ: the model's is used, and both are named.
	other := []byte(`{"type": "char", "chars": ["x", "y"]}`)
	os.WriteFile(filepath.Join(a, "chars.json"), other, 0o644)
	code, stdout, stderr := sample()
	if code != 0 || !strings.HasPrefix(stdout, "to be") || !strings.Contains(stderr, "different tokenizers") ||
		!strings.Contains(stderr, filepath.Join(a, "chars.json")) || !strings.Contains(stderr, filepath.Join(b, "chars.json")) {
		t.Fatalf("sample with another chars.json beside the first dataset: exit %d, %q: %s (want a warning naming both)", code, stdout, stderr)
	}
	// Neither is the model's: refused, naming both.
	os.WriteFile(filepath.Join(b, "chars.json"), []byte(`{"type": "char", "chars": ["x", "y", "z"]}`), 0o644)
	code, _, stderr = sample()
	if code != 1 || !strings.Contains(stderr, "different tokenizers") || !strings.Contains(stderr, filepath.Join(a, "chars.json")) ||
		!strings.Contains(stderr, filepath.Join(b, "chars.json")) || !strings.Contains(stderr, "--tokenizer SPEC") {
		t.Errorf("sample with two other chars.json: exit %d, want 1 naming both: %s", code, stderr)
	}
}

// TestSampleBareShardsRun: a run on bare GPT-NeoX shards (no manifest, --vocab-size)
// records no tokenizer; train sample then failed with "no tokenizer with the
// fingerprint  of : the dataset directory DIR/PREFIX is not there; "" is not a known
// tokenizer name", though the prefix was there. Now it says that the checkpoint
// records no tokenizer and to pass --tokenizer or --data, and with either samples
// (and export, with --data, writes that tokenizer).
func TestSampleBareShardsRun(t *testing.T) {
	dir, tok := makeCharDataset(t)
	withManifest := filepath.Join(t.TempDir(), "ds")
	if err := os.CopyFS(withManifest, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, shards.ManifestName)); err != nil {
		t.Fatal(err)
	}
	var prefix string
	if m, _ := filepath.Glob(filepath.Join(dir, "*_text_document.bin")); len(m) > 0 {
		prefix = strings.TrimSuffix(m[0], ".bin")
	} else {
		t.Fatalf("no shard in %s", dir)
	}
	out := filepath.Join(t.TempDir(), "run")
	args := append(tinyArgs(prefix, out, "2"), "--vocab-size", strconv.Itoa(tok.VocabSize()), "--eval-steps", "0")
	if code, _, stderr := runTrain(t, args...); code != 0 {
		t.Fatalf("train on bare shards: exit %d: %s", code, stderr)
	}
	code, _, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "3", "--device", "ref")
	if code != 1 || !strings.Contains(stderr, "the checkpoint does not record its tokenizer") || !strings.Contains(stderr, "--tokenizer SPEC") || !strings.Contains(stderr, "--data DIR") || strings.Contains(stderr, "is not there") {
		t.Errorf("sample of a bare-shards run: exit %d, want 1 saying it records no tokenizer and to pass --tokenizer: %s", code, stderr)
	}
	code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "3", "--device", "ref", "--tokenizer", filepath.Join(dir, "chars.json"))
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Errorf("sample with --tokenizer: exit %d, %q: %s", code, stdout, stderr)
	}
	// --data naming a dataset whose manifest records the tokenizer: it was refused
	// as without it (a2839cb); now its tokenizer is the one.
	code, stdout, stderr = runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "3", "--device", "ref", "--data", withManifest)
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Errorf("sample with --data %s: exit %d, %q: %s", withManifest, code, stdout, stderr)
	}
	// --data naming the bare shards themselves: refused, saying so.
	code, _, stderr = runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "3", "--device", "ref", "--data", dir)
	if code != 1 || !strings.Contains(stderr, "holds no manifest.json") || strings.Contains(stderr, "re-run") || !strings.Contains(stderr, "--tokenizer SPEC") {
		t.Errorf("sample with --data of bare shards: exit %d, want 1 naming the missing manifest and --tokenizer: %s", code, stderr)
	}
	// train export finds the tokenizer as sample does: with --data it wrote none,
	// warning that the checkpoint records none.
	hf := filepath.Join(t.TempDir(), "hf")
	code, _, stderr = runTrain(t, "export", "--ckpt", out, "--out", hf, "--data", withManifest)
	if _, err := os.Stat(filepath.Join(hf, "tokenizer.json")); code != 0 || err != nil || strings.Contains(stderr, "does not record its tokenizer") {
		t.Errorf("export with --data %s: exit %d (%v), want 0 with its tokenizer.json: %s", withManifest, code, err, stderr)
	}
	// --data of the bare shards themselves gives no tokenizer: the model is written
	// without one, with a warning (it failed the whole export since f36fd4f).
	hf2 := filepath.Join(t.TempDir(), "hf2")
	code, _, stderr = runTrain(t, "export", "--ckpt", out, "--out", hf2, "--data", dir)
	if _, err := os.Stat(filepath.Join(hf2, "model.safetensors")); code != 0 || err != nil || !strings.Contains(stderr, "writing the model without tokenizer.json") {
		t.Errorf("export with --data of bare shards: exit %d (%v), want 0 with a warning: %s", code, err, stderr)
	}
	if _, err := os.Stat(filepath.Join(hf2, "tokenizer.json")); err == nil {
		t.Errorf("export with --data of bare shards wrote a tokenizer.json")
	}
}
