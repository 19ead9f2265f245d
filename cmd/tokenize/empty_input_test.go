package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyInputFails: an empty input is a mistake (a wrong path, an empty download),
// not a result: `tokenize run` writes no manifest of 0 documents and `tokenize train`
// no tokenizer learned from nothing; both fail naming the input.
func TestEmptyInputFails(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"empty.jsonl", "empty.txt"} {
		in := filepath.Join(dir, name)
		os.WriteFile(in, nil, 0o644)
		out := filepath.Join(dir, "out-"+name)
		code, stdout, stderr := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "a", "--tokenizer", "gpt2", "--progress", "off")
		if code != 1 || stdout != "" || !strings.Contains(stderr, "no documents") {
			t.Errorf("run on %s: exit %d, stdout %q, stderr %s", name, code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
			t.Errorf("run on %s wrote a manifest", name)
		}
	}
	tok := filepath.Join(dir, "tok.json")
	code, _, stderr := runTokenize(t, "", "train", "--input", filepath.Join(dir, "empty.txt"), "--vocab-size", "300", "--out", tok)
	if code != 1 || !strings.Contains(stderr, "empty.txt") {
		t.Errorf("train on an empty file: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(tok); err == nil {
		t.Error("train on an empty file wrote a tokenizer")
	}
}

// TestTextKeyConflicts: --text-key without --jsonl (encode reads stdin as one text
// then, and the flag was ignored) and an empty --text-key are usage errors.
func TestTextKeyConflicts(t *testing.T) {
	if code, _, errOut := runTokenize(t, "hi", "encode", "--tokenizer", "gpt2", "--text-key", "body"); code != 2 || !strings.Contains(errOut, "--jsonl") {
		t.Errorf("encode --text-key without --jsonl: exit %d: %s", code, errOut)
	}
	in := filepath.Join(t.TempDir(), "a.jsonl")
	os.WriteFile(in, []byte(`{"text":"a"}`+"\n"), 0o644)
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", filepath.Join(t.TempDir(), "o"), "--name", "a", "--tokenizer", "gpt2", "--text-key", ""); code != 2 || !strings.Contains(errOut, "--text-key is empty") {
		t.Errorf("run --text-key '': exit %d: %s", code, errOut)
	}
}

// TestDamagedManifestHint: a garbled manifest.json in the output names --overwrite as
// the way to make the dataset again (re-running the stage is what refuses).
func TestDamagedManifestHint(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte(`{"text":"a"}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "manifest.json"), []byte("garbage"), 0o644)
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "a", "--tokenizer", "gpt2", "--progress", "off")
	if code != 1 || !strings.Contains(errOut, "--overwrite") || strings.Count(errOut, "HINT") != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "a", "--tokenizer", "gpt2", "--progress", "off", "--overwrite"); code != 0 {
		t.Fatalf("--overwrite over a garbled manifest: exit %d: %s", code, errOut)
	}
}

// TestTrainOutMissingDirectory: an --out in a directory that does not exist names it
// (the error named the hidden temporary file).
func TestTrainOutMissingDirectory(t *testing.T) {
	in := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(in, []byte("some text to learn from\n"), 0o644)
	out := filepath.Join(t.TempDir(), "nope", "tok.json")
	code, _, errOut := runTokenize(t, "", "train", "--input", in, "--vocab-size", "300", "--out", out)
	if code != 1 || !strings.Contains(errOut, "--out "+out) || strings.Contains(errOut, ".tmp-") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestRunMissingInputMakesNoOutput: a missing local input fails naming it before the
// output directory is made (an empty one was left behind).
func TestRunMissingInputMakesNoOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, _, errOut := runTokenize(t, "", "run", "--input", filepath.Join(dir, "nope.jsonl"), "--output", out, "--name", "a", "--tokenizer", "gpt2")
	if code != 1 || !strings.Contains(errOut, "nope.jsonl") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
}

// TestRunNoEODMakesNoOutput: a tokenizer without an end-of-document id (a character
// vocabulary, prep shakespeare's chars.json) and the default --append-eod fail before
// the output directory is made, which was left behind empty.
func TestRunNoEODMakesNoOutput(t *testing.T) {
	dir := t.TempDir()
	chars := filepath.Join(dir, "chars")
	if err := os.Mkdir(chars, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chars, "chars.json"), []byte(`{"type": "char", "chars": ["\n", " ", "a", "b", "c"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("abc cab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "a", "--tokenizer", chars, "--progress", "off")
	if code != 1 || !strings.Contains(errOut, "no end-of-document token; pass --append-eod=false") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
	// With --append-eod=false it runs, and keeps the vocabulary beside the data (as
	// prep does), where shards cat --decode and train sample look: it had no name
	// they could load it by.
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "a", "--tokenizer", chars, "--progress", "off", "--append-eod=false"); code != 0 {
		t.Fatalf("--append-eod=false: exit %d: %s", code, errOut)
	}
	if data, err := os.ReadFile(filepath.Join(out, "chars.json")); err != nil || !strings.Contains(string(data), `"char"`) {
		t.Errorf("chars.json beside the data: %q, %v", data, err)
	}
}

// TestRunRepeatedInputWarns: an input given twice (./a.jsonl and a.jsonl) is read twice
// with a warning naming it (there was none); distinct inputs get none.
func TestRunRepeatedInputWarns(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte("{\"text\": \"one\"}\n"), 0o644)
	os.WriteFile(b, []byte("{\"text\": \"two\"}\n"), 0o644)
	code, out, errOut := runTokenize(t, "", "run", "--input", a+","+b, "--output", filepath.Join(dir, "ab"), "--name", "x", "--tokenizer", "gpt2", "--progress", "off")
	if code != 0 || strings.Contains(errOut, "twice") {
		t.Fatalf("distinct inputs: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runTokenize(t, "", "run", "--input", a, "--input", b+","+filepath.Join(dir, ".", "a.jsonl"), "--output", filepath.Join(dir, "aba"), "--name", "x", "--tokenizer", "gpt2", "--progress", "off")
	if code != 0 || !strings.Contains(out, ": 3 documents") || !strings.Contains(errOut, "an input is given twice") || !strings.Contains(errOut, `inputs="1 and 3"`) {
		t.Fatalf("a, b, ./a: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRunStoresTokenizerBeside: a dataset made with `tokenize train`'s tokenizer.json
// keeps a copy beside it (DIR/tokenizer.json), where shards cat --decode, train sample
// and train export look; they found it nowhere and asked for --tokenizer.
func TestRunStoresTokenizerBeside(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte(strings.Repeat("the cat sat on the mat. ", 200)), 0o644)
	tok := filepath.Join(dir, "my-bpe.json")
	if code, _, errOut := runTokenize(t, "", "train", "--input", in, "--vocab-size", "280", "--out", tok); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errOut)
	}
	out := filepath.Join(dir, "ds")
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "x", "--tokenizer", tok, "--progress", "off"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	want, _ := os.ReadFile(tok)
	if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("tokenizer.json beside the data: %d bytes (%v), want the %d of %s", len(got), err, len(want), tok)
	}
	// A built-in tokenizer stores nothing.
	out2 := filepath.Join(dir, "ds2")
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out2, "--name", "x", "--tokenizer", "gpt2", "--progress", "off"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out2, "tokenizer.json")); err == nil {
		t.Error("gpt2: a tokenizer.json beside the data")
	}
}

// TestRunTokenizerFilesRecorded: the manifest lists the tokenizer files the run stored
// (source.tokenizer_files), and only those are replaced or removed by a later run: a
// rerun with --overwrite and gpt2 removes the tokenizer.json it stored, and a user's
// own tokenizer.json where one is to be stored is refused before the run, naming it
// (it was overwritten, or removed by a rerun with another tokenizer).
func TestRunTokenizerFilesRecorded(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte(strings.Repeat("the cat sat on the mat. ", 200)), 0o644)
	tok := filepath.Join(dir, "my-bpe.json")
	if code, _, errOut := runTokenize(t, "", "train", "--input", in, "--vocab-size", "280", "--out", tok); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errOut)
	}
	out := filepath.Join(dir, "ds")
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "x", "--tokenizer", tok, "--progress", "off"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	raw, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	var m struct {
		Source map[string]any `json:"source"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || fmt.Sprint(m.Source["tokenizer_files"]) != "[tokenizer.json]" {
		t.Fatalf("source.tokenizer_files = %v (%v), want [tokenizer.json]", m.Source["tokenizer_files"], err)
	}
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out, "--name", "x", "--tokenizer", "gpt2", "--overwrite", "--progress", "off"); code != 0 {
		t.Fatalf("rerun with gpt2: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "tokenizer.json")); err == nil {
		t.Fatal("the tokenizer.json the first run stored was left beside gpt2's data")
	}

	// A user's tokenizer.json in the output directory, another tokenizer given.
	out2 := filepath.Join(dir, "ds2")
	os.Mkdir(out2, 0o755)
	users := []byte(`{"type": "char", "chars": ["x", "y"]}`)
	os.WriteFile(filepath.Join(out2, "tokenizer.json"), users, 0o644)
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out2, "--name", "x", "--tokenizer", tok, "--progress", "off")
	if code != 1 || !strings.Contains(errOut, filepath.Join(out2, "tokenizer.json")) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("a user's tokenizer.json in the way: exit %d, stderr %q", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(out2, "tokenizer.json")); !bytes.Equal(got, users) {
		t.Fatal("the user's tokenizer.json was changed")
	}
	if _, err := os.Stat(filepath.Join(out2, "manifest.json")); err == nil {
		t.Fatal("the run went on (a manifest was written) before refusing")
	}
	// With gpt2 (nothing stored) it stays.
	if code, _, errOut := runTokenize(t, "", "run", "--input", in, "--output", out2, "--name", "x", "--tokenizer", "gpt2", "--progress", "off"); code != 0 {
		t.Fatalf("gpt2 beside a user's tokenizer.json: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(out2, "tokenizer.json")); !bytes.Equal(got, users) {
		t.Fatal("the user's tokenizer.json was removed by a run with gpt2")
	}
}
