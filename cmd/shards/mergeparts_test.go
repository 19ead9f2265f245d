package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/cli"
	"gptkit/pipelines"
	"gptkit/shards"
	"gptkit/tokenize"
)

// TestMergeParts: `shards merge-parts` on a 3-part run refuses while a part is missing,
// naming it, then writes the manifest of a single-process run's documents; again, it is
// a no-op.
func TestMergeParts(t *testing.T) {
	tok := tokenize.NewNeoXChar()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	var jsonl bytes.Buffer
	var texts []string
	for i := range 40 {
		text := fmt.Sprintf("document %d %s", i, strings.Repeat("abc", i))
		texts = append(texts, text)
		line, _ := json.Marshal(map[string]string{"text": text})
		jsonl.Write(append(line, '\n'))
	}
	if err := os.WriteFile(in, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	part := func(i int) {
		job := &pipelines.TokenizeRun{Inputs: []string{in}, Store: openStore(t, dir), Name: "c", Tokenizer: tok,
			TokSpec: "char", AppendEOD: true, Workers: 1, NumWorkers: 3, WorkerIndex: i, ShardBytes: 200,
			Command: fmt.Sprintf("tokenize run --worker-index %d", i)}
		if _, _, err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	part(0)
	part(2)
	if info := mustRun(t, "info", filepath.Join(dir, shards.PartDir(2, 3))); !strings.Contains(info, "part       2 of 3 of a partitioned run") {
		t.Errorf("info on a part:\n%s", info)
	}
	// info and verify of the unmerged directory say what it holds and what to run
	// (they said only that the stage making the manifest did not complete: re-run it).
	wantFailure(t, 1, []string{"2 finished parts of a partitioned run", "not yet merged", "`shards merge-parts " + dir + "`"}, "info", dir)
	// verify's problem line on stdout says so too, in place of the manifest's own hint
	// (it kept "the stage that makes it did not complete (re-run it)").
	vout, _ := wantFailure(t, 1, []string{"2 finished parts of a partitioned run", "`shards merge-parts " + dir + "`"}, "verify", dir)
	if line, _, _ := strings.Cut(vout, "\n"); !strings.Contains(line, "---> HINT: it holds 2 finished parts of a partitioned run") ||
		!strings.Contains(line, "`shards merge-parts "+dir+"`") || strings.Contains(vout, "re-run") {
		t.Errorf("verify stdout:\n%s", vout)
	}
	wantFailure(t, 1, []string{"1 of 3 parts are not finished", "part 1 (parts/part-00001-of-00003: not started)",
		"--num-workers 3 --worker-index I, for I in 1", "(part 0 ran: tokenize run --worker-index 0)"}, "merge-parts", dir)
	part(1)
	out := mustRun(t, "merge-parts", dir)
	if want := fmt.Sprintf("%s/manifest.json: 40 documents, ", dir); !strings.HasPrefix(out, want) {
		t.Fatalf("stdout %q, want %q...", out, want)
	}
	d, err := shards.OpenDataset(context.Background(), openStore(t, dir), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, text := range texts {
		want := append(tok.Encode(text), tok.EOD())
		if got := d.Tokens(int64(i)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("document %d: %v, want %v", i, got, want)
		}
	}
	if !strings.Contains(mustRun(t, "verify", dir), "ok") {
		t.Error("verify")
	}
	code, again, errOut := runShards(t, "merge-parts", dir, "--num-workers", "3")
	if code != 0 || again != out || !strings.Contains(errOut, "already merged from its 3 parts") {
		t.Fatalf("second merge: exit %d, %q, %q", code, again, errOut)
	}
}

// TestMergePartsOverwriteRemovesReplaced: `merge-parts --overwrite` over another
// dataset in DIR removes that dataset's shard files, which the new manifest does not
// list, and says so; other files stay, and `shards verify` passes (the old shards
// stayed, and verify warned about them).
func TestMergePartsOverwriteRemovesReplaced(t *testing.T) {
	tok := tokenize.NewNeoXChar()
	root := t.TempDir()
	in := filepath.Join(root, "in.jsonl")
	if err := os.WriteFile(in, []byte("{\"text\":\"one\"}\n{\"text\":\"two\"}\n{\"text\":\"three\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "ds")
	for i := range 2 {
		job := &pipelines.TokenizeRun{Inputs: []string{in}, Store: openStore(t, dir), Name: "c", Tokenizer: tok,
			TokSpec: "char", AppendEOD: true, Workers: 1, NumWorkers: 2, WorkerIndex: i}
		if _, _, err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Another dataset in DIR: one imported from a nanoGPT file.
	nano := filepath.Join(root, "x.bin")
	if err := os.WriteFile(nano, []byte{1, 0, 2, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "convert", "--from", "nanogpt", nano, "--out", dir, "--tokenizer", "char")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, refusal := wantFailure(t, 1, []string{"shards merge-parts: " + dir, "was not merged from this run's parts", "--overwrite"}, "merge-parts", dir)
	if strings.Count(refusal, "merge-parts") != 1 {
		t.Errorf("the refusal says merge-parts more than once: %q", refusal)
	}
	code, out, errOut := runShards(t, "merge-parts", dir, "--overwrite")
	if code != 0 || !strings.Contains(out, "3 documents") || !strings.Contains(errOut, dir+": removed 2 files of the replaced dataset") {
		t.Fatalf("merge-parts --overwrite: exit %d, %q, %q", code, out, errOut)
	}
	for _, name := range []string{"x_text_document.bin", "x_text_document.idx"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s of the replaced dataset is still there: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("a file the replaced manifest did not list: %v", err)
	}
	if v := mustRun(t, "verify", dir); !strings.Contains(v, "ok") {
		t.Errorf("verify:\n%s", v)
	}
}

// TestCatDecodePart: cat --decode of one part of a partitioned run with a character
// vocabulary (kept once, in chars.json at the run's directory, not in each part) finds
// it two levels up, with no --tokenizer; it said "no tokenizer with the fingerprint ...
// pass --tokenizer SPEC". convert --to nanogpt of the part writes meta.pkl from it too.
func TestCatDecodePart(t *testing.T) {
	offline(t)
	dir := t.TempDir()
	charsPartitionedRun(t, dir)
	part := filepath.Join(dir, shards.PartDir(0, 2))
	if got := catText(t, part, "--doc", "0"); got != "doc a" {
		t.Errorf("cat --decode %s --doc 0 = %q", part, got)
	}
	out := filepath.Join(t.TempDir(), "nano", "train.bin")
	mustRun(t, "convert", "--to", "nanogpt", part, "--out", out)
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "meta.pkl")); err != nil {
		t.Errorf("convert --to nanogpt of a part: no meta.pkl: %v", err)
	}
	// Its own chars.json, if a part has one, comes first (and is named when it is not the manifest's).
	other, _ := tokenize.NewCharsFromText("xyz", "x").MarshalChars()
	os.WriteFile(filepath.Join(part, "chars.json"), other, 0o644)
	wantFailure(t, 1, []string{filepath.Join(part, "chars.json") + " has fingerprint", "pass --tokenizer SPEC"}, "cat", part, "--doc", "0", "--decode")
}

// charsPartitionedRun runs tokenize run --num-workers 2 into location with a character
// vocabulary (not a built-in name) and stores chars.json beside the data, as tokenize run
// does: at location, not in the parts. Part 0's document 0 is "doc a".
func charsPartitionedRun(t *testing.T, location string) {
	t.Helper()
	chars := tokenize.NewCharsFromText("abcdefghijo \n", "my-chars")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	var jsonl bytes.Buffer
	for i := range 6 {
		line, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("doc %c", 'a'+i)})
		jsonl.Write(append(line, '\n'))
	}
	if err := os.WriteFile(in, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(t.TempDir(), "chars.json")
	data, _ := chars.MarshalChars()
	os.WriteFile(specPath, data, 0o644)
	for i := range 2 {
		job := &pipelines.TokenizeRun{Inputs: []string{in}, Store: openStore(t, location), Name: "c", Tokenizer: chars,
			TokSpec: specPath, Workers: 1, NumWorkers: 2, WorkerIndex: i}
		if _, _, err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cli.StoreTokenizerBeside(context.Background(), openStore(t, location), specPath, chars, nil, nil); err != nil {
		t.Fatal(err)
	}
}
