package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"gptkit/shards"
	"gptkit/storage"
)

// runDocs reads a dataset's documents.
func runDocs(t *testing.T, dir string) [][]int {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := shards.OpenDataset(context.Background(), st, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var docs [][]int
	for i := range d.Len() {
		docs = append(docs, d.Tokens(i))
	}
	return docs
}

// TestRunPartitioned: `tokenize run` as the parts of a partitioned run, numbered by flags
// or by a SLURM array's environment, merged, gives a single run's documents.
func TestRunPartitioned(t *testing.T) {
	spec := alphabetSpec(t)
	dir := t.TempDir()
	var inputs []string
	for f := range 2 {
		var b strings.Builder
		for i := range 30 {
			fmt.Fprintf(&b, "{\"text\": \"file %s doc %s\"}\n", strings.Repeat("f", f+1), strings.Repeat("x", i))
		}
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", f))
		os.WriteFile(p, []byte(b.String()), 0o644)
		inputs = append(inputs, p)
	}
	common := []string{"run", "--input", inputs[0], inputs[1], "--name", "c", "--tokenizer", spec, "--append-eod=false", "--shard-size", "100", "--progress", "off"}
	single := filepath.Join(t.TempDir(), "single")
	if code, _, errOut := runTokenize(t, "", append(common, "--output", single)...); code != 0 {
		t.Fatalf("single run: %s", errOut)
	}
	want := runDocs(t, single)

	out := filepath.Join(t.TempDir(), "parts")
	for i := range 3 {
		args := append(common, "--output", out)
		if i == 1 { // the others from a SLURM array's environment
			args = append(args, "--num-workers", "3", "--worker-index", "1")
		} else {
			t.Setenv("SLURM_ARRAY_TASK_ID", fmt.Sprint(i))
			t.Setenv("SLURM_ARRAY_TASK_COUNT", "3")
		}
		code, stdout, errOut := runTokenize(t, "", args...)
		wantOut := fmt.Sprintf("%s/%s/manifest.json: ", out, shards.PartDir(i, 3))
		if code != 0 || !strings.HasPrefix(stdout, wantOut) || !strings.Contains(errOut, "shards merge-parts "+out) {
			t.Fatalf("part %d: exit %d, stdout %q, want %q...; stderr %s", i, code, stdout, wantOut, errOut)
		}
		os.Unsetenv("SLURM_ARRAY_TASK_ID")
		os.Unsetenv("SLURM_ARRAY_TASK_COUNT")
	}
	st, _ := storage.Open(context.Background(), out, storage.Options{})
	if _, err := shards.MergeParts(context.Background(), st, "", shards.MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := runDocs(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("merged documents differ from a single run's:\n%v\n%v", got, want)
	}
	// A part of a merged run has nothing to do: it says so and prints the dataset.
	code, stdout, _ := runTokenize(t, "", append(common, "--output", out, "--num-workers", "3", "--worker-index", "2")...)
	if code != 0 || !strings.HasPrefix(stdout, out+"/manifest.json: 60 documents") {
		t.Fatalf("rerun after the merge: exit %d, %q", code, stdout)
	}
	// Usage errors.
	for _, tc := range [][]string{{"--num-workers", "3"}, {"--worker-index", "1"}, {"--num-workers", "2", "--worker-index", "2"}} {
		if code, _, errOut := runTokenize(t, "", append(append(common, "--output", out), tc...)...); code != 2 || !strings.Contains(errOut, "worker") {
			t.Errorf("%v: exit %d, %q", tc, code, errOut)
		}
	}
}

// TestRunPartitionedZst: one .jsonl.zst file over 3 parts is shared by stripes (all of
// this small file is stripe 0, part 0's; the others decompress it and find nothing of
// theirs), and the merge gives a single run's documents.
func TestRunPartitionedZst(t *testing.T) {
	spec := alphabetSpec(t)
	in := filepath.Join(t.TempDir(), "in.jsonl.zst")
	os.WriteFile(in, yDocsZst(200), 0o644)
	common := []string{"run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--shard-size", "100", "--progress", "off"}
	single := filepath.Join(t.TempDir(), "single")
	if code, _, errOut := runTokenize(t, "", append(common, "--output", single)...); code != 0 {
		t.Fatalf("single run: %s", errOut)
	}
	out := filepath.Join(t.TempDir(), "parts")
	for i := range 3 {
		if code, _, errOut := runTokenize(t, "", append(common, "--output", out, "--num-workers", "3", "--worker-index", fmt.Sprint(i))...); code != 0 {
			t.Fatalf("part %d: %s", i, errOut)
		}
	}
	st, _ := storage.Open(context.Background(), out, storage.Options{})
	res, err := shards.MergeParts(context.Background(), st, "", shards.MergePartsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Manifest.Shards[0].Stripe; s == nil || s.Stripe != 0 || s.File != in {
		t.Fatalf("the first shard holds %+v, want stripe 0 of %s", s, in)
	}
	if got, want := runDocs(t, out), runDocs(t, single); !reflect.DeepEqual(got, want) {
		t.Fatalf("merged documents differ from a single run's:\n%v\n%v", got, want)
	}
}

// yDocsZst returns n JSONL documents "doc y...y" (0 to 36 y's) in one zstd frame.
func yDocsZst(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"text\": \"doc %s\"}\n", strings.Repeat("y", i%37))
	}
	var zb bytes.Buffer
	zw, _ := zstd.NewWriter(&zb)
	zw.Write([]byte(b.String()))
	zw.Close()
	return zb.Bytes()
}

// TestRunLocalParts: `tokenize run --parts K` over several .jsonl.zst files gives a
// single run's documents; without --parts, many workers get the hint; usage errors.
func TestRunLocalParts(t *testing.T) {
	spec := alphabetSpec(t)
	dir := t.TempDir()
	var inputs []string
	for f := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl.zst", f))
		os.WriteFile(p, yDocsZst(50+40*f), 0o644)
		inputs = append(inputs, p)
	}
	common := []string{"run", "--input", strings.Join(inputs, ","), "--name", "c", "--tokenizer", spec, "--append-eod=false", "--shard-size", "100", "--progress", "off"}
	single := filepath.Join(t.TempDir(), "single")
	code, _, errOut := runTokenize(t, "", append(common, "--output", single, "--workers", "12")...)
	if code != 0 || !strings.Contains(errOut, "--parts 3 reads 3 at once") {
		t.Fatalf("single run: exit %d, stderr %s", code, errOut)
	}
	want := runDocs(t, single)
	for _, k := range []string{"2", "3"} {
		out := filepath.Join(t.TempDir(), "parts")
		code, stdout, errOut := runTokenize(t, "", append(common, "--output", out, "--workers", "3", "--parts", k)...)
		if code != 0 || !strings.HasPrefix(stdout, fmt.Sprintf("%s/manifest.json: %d documents", out, len(want))) {
			t.Fatalf("--parts %s: exit %d, stdout %q, stderr %s", k, code, stdout, errOut)
		}
		if got := runDocs(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("--parts %s: the documents differ from a single run's", k)
		}
	}
	for _, tc := range [][]string{{"--parts", "0"}, {"--parts", "4", "--workers", "3"}, {"--parts", "2", "--num-workers", "2", "--worker-index", "0"}} {
		out := filepath.Join(t.TempDir(), "bad")
		if code, _, errOut := runTokenize(t, "", append(append(common, "--output", out), tc...)...); code != 2 || !strings.Contains(errOut, "--parts") {
			t.Errorf("%v: exit %d, %q", tc, code, errOut)
		}
	}
}

// TestRunRerun: `tokenize run` is resumable (pipelines TestResumeAfterKill: a killed
// run's rerun keeps its shards): the same command over its finished dataset reports it
// (exit 0, the same counts), and another job over the dataset is refused.
func TestRunRerun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"text\": \"document %d %s\"}\n", i, strings.Repeat("more words ", 1+i%9))
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "out")
	args := []string{"run", "--input", in, "--output", out, "--name", "a", "--tokenizer", "gpt2", "--shard-size", "2KB", "--progress", "off"}
	code, first, errOut := runTokenize(t, "", args...)
	if code != 0 {
		t.Fatalf("first run: %s", errOut)
	}
	code, again, errOut := runTokenize(t, "", args...)
	if code != 0 || again != first || !strings.Contains(errOut, "already complete") {
		t.Fatalf("rerun: exit %d, %q (first %q)\n%s", code, again, first, errOut)
	}
	other := append(append([]string(nil), args...), "--append-eod=false")
	if code, _, errOut := runTokenize(t, "", other...); code == 0 || !strings.Contains(errOut, "different job") {
		t.Fatalf("another job over the dataset: exit %d\n%s", code, errOut)
	}
}

// TestRunOutputNotADirectory: an --output that is a regular file fails naming the flag
// (it said "storage: open F: mkdir F: not a directory", naming no flag).
func TestRunOutputNotADirectory(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte(`{"text":"hi"}`+"\n"), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", file, "--name", "a", "--tokenizer", "char", "--progress", "off")
	if code != 1 || !strings.Contains(errOut, "tokenize run: --output "+file+": ") || !strings.Contains(errOut, "not a directory") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
