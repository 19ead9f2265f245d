package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/storage"
	"gptkit/train"
	"gptkit/train/checkpoint"
)

// TestS3CheckpointEndpoint: train score, sample and export read an s3://
// checkpoint from --s3-endpoint, as train reads its data (they went to AWS's
// endpoint, where only $AWS_ENDPOINT_URL_S3 reached another server), and score it
// as the same checkpoint on disk.
func TestS3CheckpointEndpoint(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	data, tok := makeCharDataset(t)
	out := singleRun(t, data, 4, 6, 0)
	local := filepath.Join(out, "checkpoints", checkpoint.DirName(6))
	var files []checkpoint.File
	for _, name := range []string{train.ModelFile, train.OptimizerFile, train.StateFile} {
		b, err := os.ReadFile(filepath.Join(local, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, checkpoint.File{Name: name, Write: func(w io.Writer) error { _, err := w.Write(b); return err }})
	}
	m := checkpoint.Manager{Storage: storage.Options{S3Endpoint: srv.Endpoint}}
	remote, err := m.Save(context.Background(), "s3://"+srv.NewBucket(t)+"/run/checkpoints", 6, files, 0)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	raw, _ := json.Marshal([][]int{tok.Encode("to be or not to")})
	os.WriteFile(tokens, raw, 0o644)
	score := func(ckpt string, more ...string) (int, string, string) {
		return runTrain(t, append([]string{"score", "--ckpt", ckpt, "--tokens", tokens, "--device", "ref"}, more...)...)
	}
	code, want, stderr := score(local)
	if code != 0 {
		t.Fatalf("score %s: exit %d: %s", local, code, stderr)
	}
	code, got, stderr := score(remote, "--s3-endpoint", srv.Endpoint)
	if code != 0 || got != want {
		t.Fatalf("score %s --s3-endpoint %s: exit %d, %q, %s; want %q as on disk", remote, srv.Endpoint, code, got, stderr, want)
	}
	if code, _, stderr := runTrain(t, "sample", "--ckpt", remote, "--s3-endpoint", srv.Endpoint, "--data", data, "--prompt", "to", "--max-new-tokens", "3", "--device", "ref"); code != 0 {
		t.Errorf("sample --ckpt %s --s3-endpoint: exit %d: %s", remote, code, stderr)
	}
	if code, _, stderr := runTrain(t, "export", "--ckpt", remote, "--s3-endpoint", srv.Endpoint, "--format", "hf", "--out", t.TempDir(), "--no-tokenizer"); code != 0 {
		t.Errorf("export --ckpt %s --s3-endpoint: exit %d: %s", remote, code, stderr)
	}
}
