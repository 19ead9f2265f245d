package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/sharedtest"
	"gptkit/internal/testfiles"
	"gptkit/pipelines"
)

// splitDataset makes a GPT-2 dataset in dir with a train and a val split (as prep
// writes them: DIR_text_document and DIR_val_text_document) and returns each split's
// documents.
func splitDataset(t *testing.T, dir string) (train, val [][]int) {
	t.Helper()
	tok := gpt2(t)
	var inputs []pipelines.SplitInputs
	for _, split := range []struct {
		name  string
		texts []string
		docs  *[][]int
	}{{"", sampleTexts[:4], &train}, {"val", sampleTexts[4:], &val}} {
		var text strings.Builder
		for _, s := range split.texts {
			line, _ := json.Marshal(map[string]string{"text": s})
			text.Write(append(line, '\n'))
			if s != "" {
				*split.docs = append(*split.docs, append(tok.Encode(s), tok.EOD()))
			}
		}
		in := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, pipelines.SplitInputs{Split: split.name, Inputs: []string{in}})
	}
	job := &pipelines.TokenizeRun{Splits: inputs, Store: openStore(t, dir), Name: filepath.Base(dir), Tokenizer: tok, TokSpec: "gpt2", AppendEOD: true, Workers: 1}
	if _, _, err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(train) == 0 || len(val) == 0 {
		t.Fatalf("%d train and %d val documents", len(train), len(val))
	}
	return train, val
}

// TestConvertNanoGPTSplits: --to nanogpt writes nanoGPT's train.bin and val.bin, each
// holding its split only (documents ending in EOD, as openwebtext/prepare.py writes
// them), and --from nanogpt --split-at-eod reads them back.
func TestConvertNanoGPTSplits(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	train, val := splitDataset(t, dir)
	nano := filepath.Join(root, "nano")
	out := mustRun(t, "convert", "--to", "nanogpt", dir, "--out", nano)
	trainBin, valBin := filepath.Join(nano, "train.bin"), filepath.Join(nano, "val.bin")
	if want := fmt.Sprintf("%s: %d tokens\n%s: %d tokens\n", trainBin, countTokens(train), valBin, countTokens(val)); out != want {
		t.Errorf("convert --to nanogpt printed %q, want %q", out, want)
	}
	for file, want := range map[string][][]int{trainBin: train, valBin: val} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := uint16s(data); !slices.Equal(got, slices.Concat(want...)) {
			t.Errorf("%s holds %d tokens, want its split's %d", file, len(got), countTokens(want))
		}
	}

	// GPT-2's vocabulary is nanoGPT's default: no meta.pkl, no warning.
	if _, err := os.Stat(filepath.Join(nano, "meta.pkl")); !os.IsNotExist(err) {
		t.Errorf("a GPT-2 export wrote a meta.pkl: %v", err)
	}
	if _, _, errOut := runShards(t, "convert", "--to", "nanogpt", dir, "--out", filepath.Join(root, "nano2")); errOut != "" {
		t.Errorf("a GPT-2 export warned: %q", errOut)
	}

	// One split to one file.
	one := filepath.Join(root, "one", "val.bin")
	if out := mustRun(t, "convert", "--to", "nanogpt", dir, "--out", one, "--split", "val"); out != fmt.Sprintf("%s: %d tokens\n", one, countTokens(val)) {
		t.Errorf("--split val printed %q", out)
	}
	if a, b := readFile(t, one), readFile(t, valBin); !bytes.Equal(a, b) {
		t.Error("--split val --out val.bin differs from the val.bin of the whole export")
	}
	wantFailure(t, 1, []string{"has no test split", "train, val"}, "convert", "--to", "nanogpt", dir, "--out", nano, "--split", "test")

	spec := testfiles.Path(t, "tokenizers/gpt2")
	back := filepath.Join(root, "back")
	out = mustRun(t, "convert", "--from", "nanogpt", trainBin, "--out", back, "--tokenizer", spec, "--split-at-eod")
	if out != fmt.Sprintf("%s/manifest.json: %d documents, %d tokens, 1 shards\n", back, len(train), countTokens(train)) {
		t.Errorf("convert --from nanogpt printed %q", out)
	}
	mustRun(t, "verify", back)
	if v := infoJSON(t, back); v["tokenizer"].(map[string]any)["fingerprint"] != gpt2(t).Fingerprint() {
		t.Errorf("imported manifest's tokenizer: %v", v["tokenizer"])
	}
	for k := range train {
		if ids := catIDs(t, back, k); !slices.Equal(ids, train[k]) {
			t.Errorf("imported document %d = %v, want %v", k, ids, train[k])
		}
	}

	// Both files back: the val.bin shard is the val split, not more training data.
	both := filepath.Join(root, "both")
	mustRun(t, "convert", "--from", "nanogpt", trainBin, valBin, "--out", both, "--tokenizer", spec, "--split-at-eod")
	splits := map[string]string{}
	for _, sh := range infoJSON(t, both)["shards"].([]any) {
		m := sh.(map[string]any)
		split, _ := m["split"].(string)
		splits[m["prefix"].(string)] = split
	}
	if want := map[string]string{"train_text_document": "", "val_text_document": "val"}; !maps.Equal(splits, want) {
		t.Errorf("imported train.bin and val.bin: splits %v, want %v", splits, want)
	}

	// Without --split-at-eod the file is one document.
	whole := filepath.Join(root, "whole")
	mustRun(t, "convert", "--from", "nanogpt", trainBin, "--out", whole, "--tokenizer", spec)
	if ids := catIDs(t, whole, 0); !slices.Equal(ids, slices.Concat(train...)) {
		t.Errorf("imported as one document: %d tokens, want %d", len(ids), countTokens(train))
	}
	wantFailure(t, 1, []string{"already has a manifest.json"}, "convert", "--from", "nanogpt", trainBin, "--out", whole, "--tokenizer", spec)

	// Ids the tokenizer does not have are refused.
	odd := filepath.Join(root, "odd.bin")
	os.WriteFile(odd, []byte{0xff, 0xff}, 0o644)
	wantFailure(t, 1, []string{odd, "65535", "vocabulary size 50257"}, "convert", "--from", "nanogpt", odd, "--out", filepath.Join(root, "odd"), "--tokenizer", spec)
	// A failed import leaves no directory it made (its writer lock file once kept it).
	if _, err := os.Stat(filepath.Join(root, "odd")); !os.IsNotExist(err) {
		t.Errorf("a failed import left its output directory: %v", err)
	}
	// A vocabulary that uint16 files cannot hold is refused before reading, naming the file.
	wantFailure(t, 1, []string{trainBin, "100277", "cl100k_base"}, "convert", "--from", "nanogpt", trainBin, "--out", filepath.Join(root, "big"), "--tokenizer", "cl100k_base")
}

// llmcStream is what llm.c's dev/data scripts write for docs (each ending in EOD): the
// end-of-text id before each document instead.
func llmcStream(docs [][]int) []int {
	var out []int
	for _, d := range docs {
		out = append(out, d[len(d)-1])
		out = append(out, d[:len(d)-1]...)
	}
	return out
}

// TestConvertLLMCSplits: --to llmc writes the val split to NAME_val_000000.bin and the
// train split from NAME_train_000001.bin, EOT before each document as llm.c does;
// --split picks one; --from llmc --split-at-eod gives the documents back.
func TestConvertLLMCSplits(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	train, val := splitDataset(t, dir)
	lc := filepath.Join(root, "llmc")
	const per = 16
	out := mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--shard-tokens", fmt.Sprint(per))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var files []string
	i := 0
	for _, split := range []struct {
		name  string
		first int
		docs  [][]int
	}{{"val", 0, val}, {"train", 1, train}} {
		stream := llmcStream(split.docs)
		var got []int
		for k := 0; k*per < len(stream); k++ {
			file := filepath.Join(lc, fmt.Sprintf("sample_%s_%06d.bin", split.name, split.first+k))
			n := min(per, len(stream)-k*per)
			if i >= len(lines) || lines[i] != fmt.Sprintf("%s: %d tokens", file, n) {
				t.Fatalf("line %d of %q: want %s: %d tokens", i, out, file, n)
			}
			i++
			data := readFile(t, file)
			if magic, version, ntok := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:]), binary.LittleEndian.Uint32(data[8:]); magic != 20240520 || version != 1 || int(ntok) != n || len(data) != 1024+2*n {
				t.Errorf("%s: header %d %d %d, %d bytes", file, magic, version, ntok, len(data))
			}
			got = append(got, uint16s(data[1024:])...)
			if split.name == "train" {
				files = append(files, file)
			}
		}
		if !slices.Equal(got, stream) {
			t.Fatalf("the %s files hold %v, want llm.c's layout of the split %v", split.name, got, stream)
		}
	}
	if i != len(lines) {
		t.Errorf("convert --to llmc printed %d lines, want %d:\n%s", len(lines), i, out)
	}

	// Round trip: the train files (one stream across them) back into documents.
	var stream []byte
	for _, f := range files {
		stream = append(stream, readFile(t, f)[1024:]...)
	}
	hdr := readFile(t, files[0])[:1024]
	binary.LittleEndian.PutUint32(hdr[8:], uint32(len(stream)/2))
	whole := filepath.Join(root, "sample_train.bin")
	os.WriteFile(whole, append(hdr, stream...), 0o644)
	back := filepath.Join(root, "back")
	mustRun(t, "convert", "--from", "llmc", whole, "--out", back, "--tokenizer", "gpt2", "--split-at-eod")
	mustRun(t, "verify", back)
	for k := range train {
		if ids := catIDs(t, back, k); !slices.Equal(ids, train[k]) {
			t.Errorf("round trip: document %d = %v, want %v", k, ids, train[k])
		}
	}

	// --name, --split val alone in one big file.
	out = mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--name", "tiny", "--split", "val")
	if want := filepath.Join(lc, "tiny_val_000000.bin") + fmt.Sprintf(": %d tokens\n", countTokens(val)); out != want {
		t.Errorf("convert --to llmc --split val printed %q, want %q", out, want)
	}
	if got := uint16s(readFile(t, filepath.Join(lc, "tiny_val_000000.bin"))[1024:]); !slices.Equal(got, llmcStream(val)) {
		t.Errorf("--split val wrote %v, want the val split %v", got, llmcStream(val))
	}
	wantFailure(t, 1, []string{"has no test split"}, "convert", "--to", "llmc", dir, "--out", lc, "--split", "test")

	// The train split again, in one file: the earlier export's train files after the
	// first are gone (llm.c would read every sample_train_*.bin), the other splits' stay.
	mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--split", "train")
	left, _ := filepath.Glob(filepath.Join(lc, "sample_train_*.bin"))
	if len(files) < 2 || !slices.Equal(left, files[:1]) {
		t.Errorf("train files after a second export into one file: %v, want %v", left, files[:1])
	}
	if _, err := os.Stat(filepath.Join(lc, "sample_val_000000.bin")); err != nil {
		t.Errorf("the val split's file: %v", err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestConvertUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"convert", dir, "--out", "x"},
		{"convert", "--to", "nanogpt", "--from", "llmc", dir, "--out", "x"},
		{"convert", "--to", "parquet", dir, "--out", "x"},
		{"convert", "--to", "nanogpt", dir},
		{"convert", "--to", "nanogpt", dir, dir, "--out", "x"},
		{"convert", "--to", "nanogpt", dir, "--out", "x", "--split", "a/b"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--split", "no such"},
		{"convert", "--from", "nanogpt", "f.bin", "--out", "x", "--tokenizer", "gpt2", "--split", "val"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--shard-tokens", "0"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--tokenizer", "gpt2"},
		{"convert", "--from", "nanogpt", "--out", "x", "--tokenizer", "gpt2"},
		{"convert", "--from", "nanogpt", "f.bin", "--out", "x"},
		{"convert", "--from", "nanogpt", "f.bin", "--out", "x", "--tokenizer", "gpt2", "--name", "n"},
		{"convert", "--from", "nanogpt", "s3://b/f.bin", "--out", "x", "--tokenizer", "gpt2"},
	} {
		if code, _, errOut := runShards(t, args...); code != 2 || !strings.Contains(errOut, "(run 'shards convert -h' for usage)") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

func uint16s(b []byte) []int {
	ids := make([]int, len(b)/2)
	for i := range ids {
		ids[i] = int(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return ids
}

// TestConvertLLMCFailedReexport: a re-export that fails part way leaves no file of the
// earlier export of those splits (their first files replaced and removed, the rest
// read by llm.c as a whole, smaller set), and says so.
func TestConvertLLMCFailedReexport(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	splitDataset(t, dir)
	lc := filepath.Join(root, "llmc")
	mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--shard-tokens", "16")
	old, _ := filepath.Glob(filepath.Join(lc, "sample_train_*.bin"))
	if len(old) < 3 {
		t.Fatalf("%d train files, want 3 or more", len(old))
	}
	// The second train file of the re-export cannot be written (a directory in its place).
	blocked := filepath.Join(lc, "sample_train_000002.bin")
	os.Remove(blocked)
	os.MkdirAll(filepath.Join(blocked, "x"), 0o755)
	code, _, stderr := runShards(t, "convert", "--to", "llmc", dir, "--out", lc, "--shard-tokens", "16")
	if code != 1 || !strings.Contains(stderr, "removed too") {
		t.Fatalf("failed re-export: exit %d: %s", code, stderr)
	}
	for _, pattern := range []string{"sample_train_*.bin", "sample_val_*.bin"} {
		left, _ := filepath.Glob(filepath.Join(lc, pattern))
		for _, f := range left {
			if fi, err := os.Stat(f); err == nil && !fi.IsDir() {
				t.Errorf("%s left from the earlier export", f)
			}
		}
	}
}

// TestConvertRefusesDamagedShards: an export reads the shards verified (as merge and
// train do): a flipped byte fails it naming the shard, where it once exported the
// damaged tokens silently.
func TestConvertRefusesDamagedShards(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	splitDataset(t, dir)
	bins, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
	data := readFile(t, bins[0])
	data[len(data)/2] ^= 1
	os.WriteFile(bins[0], data, 0o644)
	for _, to := range []string{"nanogpt", "llmc"} {
		_, stderr := wantFailure(t, 1, []string{filepath.Base(bins[0])}, "convert", "--to", to, dir, "--out", filepath.Join(root, to), "--cache-dir", t.TempDir())
		if !strings.Contains(stderr, "sha256") && !strings.Contains(stderr, "checksum") {
			t.Errorf("--to %s of a damaged shard: %s", to, stderr)
		}
	}
}

// TestConvertImportEmptyFile: an empty file is refused, naming it, and no dataset is
// made (it made a dataset of 0 documents and reported success).
func TestConvertImportEmptyFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "train.bin")
	os.WriteFile(empty, nil, 0o644)
	out := filepath.Join(dir, "ds")
	wantFailure(t, 1, []string{"train.bin is empty"}, "convert", "--from", "nanogpt", empty, "--out", out, "--tokenizer", "gpt2")
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
}

// TestConvertImportDirectory: a directory given as a file to import (nanoGPT's data/NAME
// directory) is refused naming it and saying what to pass; it failed with
// "import: read DIR: is a directory".
func TestConvertImportDirectory(t *testing.T) {
	dir := t.TempDir()
	ng := filepath.Join(dir, "shakespeare_char")
	os.Mkdir(ng, 0o755)
	out := filepath.Join(dir, "ds")
	wantFailure(t, 1, []string{ng + " is a directory", filepath.Join(ng, "*.bin")}, "convert", "--from", "nanogpt", ng, "--out", out, "--tokenizer", "gpt2")
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
}

// TestConvertImportTooLargeForOneDocument: without --split-at-eod a file is one
// document, and one of more tokens than an .idx keeps for a document is refused up
// front, naming the file, the limit and --split-at-eod, and no dataset is made (the
// file was read into memory, 8 bytes a token, until the limit).
func TestConvertImportTooLargeForOneDocument(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "train.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 32); err != nil { // sparse: 2^31 tokens
		f.Close()
		sharedtest.Missing(t, "a 4 GiB sparse file (this filesystem refused one: %v)", err)
	}
	f.Close()
	out := filepath.Join(dir, "ds")
	wantFailure(t, 1, []string{big, "2147483648 tokens would be one document", "2147483647", "--split-at-eod"},
		"convert", "--from", "nanogpt", big, "--out", out, "--tokenizer", "gpt2")
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
}

// TestConvertImportCharVocab: a dataset imported with a character vocabulary (prep
// shakespeare's chars.json, the nanoGPT shakespeare_char round trip) keeps it beside the
// data, as prep does, so that cat --decode (and train sample) find it without
// --tokenizer; they failed: "no tokenizer with the fingerprint ...".
func TestConvertImportCharVocab(t *testing.T) {
	dir := t.TempDir()
	chars := filepath.Join(dir, "chars")
	os.Mkdir(chars, 0o755)
	os.WriteFile(filepath.Join(chars, "chars.json"), []byte(`{"type": "char", "chars": ["\n", " ", "a", "b", "c"]}`), 0o644)
	ids := []uint16{2, 3, 4, 1, 4, 2, 3, 0} // "abc cab\n"
	bin := make([]byte, 2*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint16(bin[2*i:], id)
	}
	train := filepath.Join(dir, "train.bin")
	os.WriteFile(train, bin, 0o644)
	out := filepath.Join(dir, "ds")
	mustRun(t, "convert", "--from", "nanogpt", train, "--out", out, "--tokenizer", chars)
	if _, err := os.Stat(filepath.Join(out, "chars.json")); err != nil {
		t.Errorf("no chars.json beside the data: %v", err)
	}
	if got := mustRun(t, "cat", out, "--doc", "0", "--decode"); got != "\"abc cab\\n\"\n" {
		t.Errorf("cat --decode: %q", got)
	}
	// --split-at-eod with a tokenizer that has no end-of-document id says so, naming
	// the flag, before anything is made.
	out3 := filepath.Join(dir, "ds3")
	wantFailure(t, 1, []string{"--split-at-eod: tokenizer chars has no end-of-document id", "drop --split-at-eod"}, "convert", "--from", "nanogpt", train, "--out", out3, "--tokenizer", chars, "--split-at-eod")
	if _, err := os.Stat(out3); err == nil {
		t.Errorf("a refused import left %s", out3)
	}
	// A failed import leaves no chars.json (nor the directory).
	out2 := filepath.Join(dir, "ds2")
	wantFailure(t, 1, []string{"train.bin"}, "convert", "--from", "llmc", train, "--out", out2, "--tokenizer", chars)
	if _, err := os.Stat(out2); err == nil {
		t.Errorf("a failed import left %s", out2)
	}
}

// TestConvertNanoGPTMeta: --to nanogpt of a character dataset writes nanoGPT's meta.pkl
// ({'vocab_size', 'itos', 'stoi'}, as shakespeare_char/prepare.py does) beside the .bin
// files (there was none: nanoGPT trained a 50304-wide model and sampled with GPT-2's
// encoding); another BPE vocabulary than GPT-2's gets a warning and no meta.pkl.
func TestConvertNanoGPTMeta(t *testing.T) {
	dir := t.TempDir()
	chars := filepath.Join(dir, "chars")
	os.Mkdir(chars, 0o755)
	vocab := []string{"\n", " ", "'", "a", "b", "é", "😀"}
	cj, _ := json.Marshal(map[string]any{"type": "char", "chars": vocab})
	os.WriteFile(filepath.Join(chars, "chars.json"), cj, 0o644)
	ids := []uint16{3, 4, 5, 1, 6, 2, 0}
	bin := make([]byte, 2*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint16(bin[2*i:], id)
	}
	train := filepath.Join(dir, "train.bin")
	os.WriteFile(train, bin, 0o644)
	ds := filepath.Join(dir, "ds")
	mustRun(t, "convert", "--from", "nanogpt", train, "--out", ds, "--tokenizer", chars)

	nano := filepath.Join(dir, "nano")
	out := mustRun(t, "convert", "--to", "nanogpt", ds, "--out", nano)
	meta := filepath.Join(nano, "meta.pkl")
	if want := fmt.Sprintf("%s: %d tokens\n%s: vocab_size %d (character vocabulary)\n", filepath.Join(nano, "train.bin"), len(ids), meta, len(vocab)); out != want {
		t.Errorf("printed %q, want %q", out, want)
	}
	data := readFile(t, meta)
	if want := nanoGPTCharMeta(vocab); !bytes.Equal(data, want) {
		t.Errorf("meta.pkl is not nanoGPTCharMeta(vocab)")
	}
	// One file (--out FILE.bin) gets it beside too.
	mustRun(t, "convert", "--to", "nanogpt", ds, "--out", filepath.Join(dir, "one", "train.bin"))
	if !bytes.Equal(readFile(t, filepath.Join(dir, "one", "meta.pkl")), data) {
		t.Error("--out FILE.bin: no meta.pkl beside it")
	}

	// Python's pickle reads it back as prepare.py's dict.
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is needed to check meta.pkl: %v", err)
		}
		t.Log("no python3: meta.pkl checked in Go only")
	} else {
		script := `import json, pickle, sys
chars = json.load(open(sys.argv[2]))["chars"]
want = {"vocab_size": len(chars), "itos": {i: c for i, c in enumerate(chars)}, "stoi": {c: i for i, c in enumerate(chars)}}
got = pickle.load(open(sys.argv[1], "rb"))
assert got == want and list(got) == ["vocab_size", "itos", "stoi"], (got, want)
`
		if out, err := exec.Command(python, "-c", script, meta, filepath.Join(chars, "chars.json")).CombinedOutput(); err != nil {
			t.Errorf("python3 pickle.load(meta.pkl): %v\n%s", err, out)
		}
	}

	// Another BPE vocabulary: nanoGPT would assume GPT-2's; a warning, no meta.pkl.
	gpt2DS := filepath.Join(dir, "gpt2")
	splitDataset(t, gpt2DS)
	neox := filepath.Join(dir, "neox")
	mustRun(t, "convert", "--to", "nanogpt", gpt2DS, "--out", filepath.Join(dir, "g"))
	mustRun(t, "convert", "--from", "nanogpt", filepath.Join(dir, "g", "train.bin"), "--out", neox, "--tokenizer", testfiles.Path(t, "tokenizers/neox-20b"))
	code, _, errOut := runShards(t, "convert", "--to", "nanogpt", neox, "--out", filepath.Join(dir, "neoxnano"))
	if code != 0 || !strings.Contains(errOut, "no meta.pkl written") || !strings.Contains(errOut, "assumes GPT-2") || strings.Contains(errOut, "removed") {
		t.Errorf("export of a neox-20b dataset: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "neoxnano", "meta.pkl")); !os.IsNotExist(err) {
		t.Errorf("a neox-20b export wrote a meta.pkl: %v", err)
	}

	// A GPT-2 export into the directory of the character one: its meta.pkl is removed
	// (nanoGPT would read its vocab_size, 7, for GPT-2's ids).
	code, _, errOut = runShards(t, "convert", "--to", "nanogpt", gpt2DS, "--out", nano)
	if code != 0 || !strings.Contains(errOut, "meta.pkl") {
		t.Errorf("GPT-2 export over a character one: exit %d, stderr %q (want the removed meta.pkl named)", code, errOut)
	}
	if _, err := os.Stat(meta); !os.IsNotExist(err) {
		t.Errorf("a GPT-2 export left the character export's meta.pkl beside its train.bin: %v", err)
	}
}

// TestNanoGPTCharMetaBytes: the pickle's opcodes, byte for byte (protocol 2, no memo),
// and ints in each width.
func TestNanoGPTCharMetaBytes(t *testing.T) {
	got := nanoGPTCharMeta([]string{"\n", "é"})
	want := "\x80\x02}(" +
		"X\x0a\x00\x00\x00vocab_size" + "K\x02" +
		"X\x04\x00\x00\x00itos}(" + "K\x00X\x01\x00\x00\x00\n" + "K\x01X\x02\x00\x00\x00\xc3\xa9" + "u" +
		"X\x04\x00\x00\x00stoi}(" + "X\x01\x00\x00\x00\nK\x00" + "X\x02\x00\x00\x00\xc3\xa9K\x01" + "u" +
		"u."
	if string(got) != want {
		t.Errorf("nanoGPTCharMeta = %q\nwant            %q", got, want)
	}
	for n, want := range map[int]string{0: "K\x00", 255: "K\xff", 256: "M\x00\x01", 65535: "M\xff\xff", 65536: "J\x00\x00\x01\x00"} {
		var b bytes.Buffer
		if pickleInt(&b, n); b.String() != want {
			t.Errorf("pickleInt(%d) = %q, want %q", n, b.String(), want)
		}
	}
}

// TestConvertImportKeepsExistingTokenizer: an import refused because OUT already holds
// a dataset leaves that dataset's tokenizer files as they were (they were replaced by
// the new tokenizer's, then removed with them, before the refusal).
func TestConvertImportKeepsExistingTokenizer(t *testing.T) {
	dir := t.TempDir()
	chars := filepath.Join(dir, "chars")
	os.Mkdir(chars, 0o755)
	cj, _ := json.Marshal(map[string]any{"type": "char", "chars": []string{"\n", "a", "b"}})
	os.WriteFile(filepath.Join(chars, "chars.json"), cj, 0o644)
	bin := []byte{1, 0, 2, 0, 0, 0}
	train := filepath.Join(dir, "train.bin")
	os.WriteFile(train, bin, 0o644)
	ds := filepath.Join(dir, "ds")
	mustRun(t, "convert", "--from", "nanogpt", train, "--out", ds, "--tokenizer", chars)
	want := readFile(t, filepath.Join(ds, "chars.json"))

	for _, spec := range []string{chars, testfiles.Path(t, "tokenizers/neox-20b")} {
		code, _, errOut := runShards(t, "convert", "--from", "nanogpt", train, "--out", ds, "--tokenizer", spec)
		if code == 0 || !strings.Contains(errOut, "already") {
			t.Errorf("import into a dataset (--tokenizer %s): exit %d, stderr %q, want a refusal", spec, code, errOut)
		}
		got, err := os.ReadFile(filepath.Join(ds, "chars.json"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("a refused import (--tokenizer %s) changed the dataset's chars.json: %v", spec, err)
		}
		for _, f := range []string{"tokenizer.json", "vocab.json", "merges.txt"} {
			if _, err := os.Stat(filepath.Join(ds, f)); err == nil {
				t.Errorf("a refused import (--tokenizer %s) left %s in the dataset", spec, f)
			}
		}
	}
	if out := mustRun(t, "cat", ds, "--doc", "0", "--decode"); !strings.Contains(out, "ab") {
		t.Errorf("cat --decode after the refused imports: %q", out)
	}
}

// TestConvertNanoGPTMetaGPT2NotPath: --to nanogpt of a GPT-2 dataset run where the
// working directory holds a directory named gpt2 (here the dataset itself) writes no
// meta.pkl and no warning: GPT-2's vocabulary is nanoGPT's default. The built-in was
// loaded with spec.Load, where the path ./gpt2 wins: "directory gpt2 holds no
// tokenizer", so the export warned that nanoGPT would assume GPT-2's vocabulary.
func TestConvertNanoGPTMetaGPT2NotPath(t *testing.T) {
	dir := t.TempDir()
	splitDataset(t, filepath.Join(dir, "gpt2"))
	t.Chdir(dir)
	code, _, errOut := runShards(t, "convert", "--to", "nanogpt", "gpt2", "--out", "nano")
	if code != 0 || strings.Contains(errOut, "meta.pkl") {
		t.Errorf("export of a GPT-2 dataset beside ./gpt2: exit %d, stderr %q (want no meta.pkl warning)", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nano", "meta.pkl")); !os.IsNotExist(err) {
		t.Errorf("a GPT-2 export wrote a meta.pkl: %v", err)
	}
}
