package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/storage"
)

// TestRunRedactsCredentials: a password in --s3-endpoint is neither printed nor stored
// in the manifest's source.command (issue 15, item 10).
func TestRunRedactsCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	spec := alphabetSpec(t)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, []byte("{\"text\": \"abc\"}\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	const endpoint = "http://key:Pa55w0rdXYZ@127.0.0.1:1"
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", out, "--s3-endpoint", endpoint)
	if code != 0 {
		t.Fatalf("local run: %s", errOut)
	}
	m, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m), "Pa55w0rdXYZ") || !strings.Contains(string(m), "http://REDACTED@127.0.0.1:1") {
		t.Errorf("manifest.json keeps the password:\n%s", m)
	}
	code, _, errOut = runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", "s3://bucket/x", "--s3-endpoint", "key:Pa55w0rdXYZ@127.0.0.1:1")
	if code == 0 || strings.Contains(errOut, "Pa55w0rdXYZ") {
		t.Errorf("exit %d, stderr keeps the password: %s", code, errOut)
	}
	code, _, errOut = runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", "s3://bucket/x", "--s3-endpoint", endpoint)
	if code == 0 || strings.Contains(errOut, "Pa55w0rdXYZ") {
		t.Errorf("exit %d, stderr keeps the password: %s", code, errOut)
	}
}

// TestTwoWritersOneOutput: two `tokenize run` with different inputs into one output,
// started together, many times over, on a local directory and on MinIO: never do both
// exit 0, the loser fails saying why (the other writer holds the directory, or its
// dataset is already there), and the dataset is the winner's, intact (issue 15, item 1:
// both exited 0 and the winning manifest listed the other run's shards).
func TestTwoWritersOneOutput(t *testing.T) {
	spec := alphabetSpec(t)
	in := t.TempDir()
	var inputs [2]string
	for k, letter := range []string{"a", "b"} {
		var b strings.Builder
		for i := range 2000 {
			fmt.Fprintf(&b, "{\"text\": \"%s %s\"}\n", strings.Repeat(letter, 1+i%40), strings.Repeat("z", i%7))
		}
		inputs[k] = filepath.Join(in, letter+".jsonl")
		os.WriteFile(inputs[k], []byte(b.String()), 0o644)
	}
	args := func(input, out string) []string {
		return []string{"run", "--input", input, "--output", out, "--name", "c", "--tokenizer", spec, "--append-eod=false",
			"--shard-size", "4KB", "--workers", "2", "--progress", "off"}
	}
	var want [2][][]int
	for k := range inputs {
		ref := filepath.Join(t.TempDir(), "ref")
		if code, _, errOut := runTokenize(t, "", args(inputs[k], ref)...); code != 0 {
			t.Fatalf("reference run: %s", errOut)
		}
		want[k] = runDocs(t, ref)
	}

	var locked, existed int // how the losers lost: at the lock, or at the finished dataset
	race := func(t *testing.T, out string) {
		var codes [2]int
		var errs [2]string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for k := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				codes[k], _, errs[k] = runTokenize(t, "", args(inputs[k], out)...)
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for k, code := range codes {
			switch {
			case code == 0 && winner >= 0:
				t.Fatalf("both writers exited 0 into %s", out)
			case code == 0:
				winner = k
			case strings.Contains(errs[k], "being written by another writer"):
				locked++
			case strings.Contains(errs[k], "already holds a dataset"):
				existed++
			case !strings.Contains(errs[k], "being written by another writer") && !strings.Contains(errs[k], "already holds a dataset"):
				t.Fatalf("writer %d failed without naming the other: %s", k, errs[k])
			}
		}
		if winner < 0 {
			t.Fatalf("no writer succeeded: %q", errs)
		}
		st, err := storage.Open(context.Background(), out, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := shards.OpenDataset(context.Background(), st, "", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var got [][]int
		for i := range d.Len() {
			got = append(got, d.Tokens(i))
		}
		if !reflect.DeepEqual(got, want[winner]) {
			t.Fatalf("%s holds %d documents that are not writer %d's own %d", out, len(got), winner, len(want[winner]))
		}
		probs, err := shards.Verify(context.Background(), st, "")
		if err != nil || len(probs) > 0 {
			t.Fatalf("shards verify %s: %v %v", out, probs, err)
		}
	}

	defer func() { t.Logf("losers stopped by the lock: %d, by the finished dataset: %d", locked, existed) }()
	t.Run("local", func(t *testing.T) {
		for i := range 25 {
			out := filepath.Join(t.TempDir(), fmt.Sprint("out", i))
			race(t, out)
		}
	})
	t.Run("minio", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a MinIO server")
		}
		srv := miniotest.Start(t)
		srv.Setenv(t)
		bucket := srv.NewBucket(t)
		for i := range 8 {
			out := fmt.Sprintf("s3://%s/out%d", bucket, i)
			race(t, out)
		}
	})
}
