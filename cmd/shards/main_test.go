package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/internal/testfiles"
	"gptkit/pipelines"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

func TestMain(m *testing.M) {
	os.Exit(miniotest.Main(m)) // stops the MinIO server s3_test.go may start
}

// runShards runs the command line in-process.
func runShards(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runShardsCtx(t, context.Background(), args...)
}

func runShardsCtx(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(ctx, args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun runs the command line and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runShards(t, args...)
	if code != 0 {
		t.Fatalf("shards %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// wantFailure runs the command line and checks it exits code with one line on stderr
// that contains every string of want.
func wantFailure(t *testing.T, code int, want []string, args ...string) (stdout, stderr string) {
	t.Helper()
	got, out, errOut := runShards(t, args...)
	if got != code {
		t.Fatalf("shards %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	if code == 1 && strings.Count(errOut, "\n") != 1 {
		t.Errorf("shards %s: want one line on stderr, got %q", strings.Join(args, " "), errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("shards %s: stderr %q does not mention %q", strings.Join(args, " "), errOut, w)
		}
	}
	return out, errOut
}

var gpt2Once struct {
	sync.Once
	tok *tokenize.Tokenizer
	err error
}

// gpt2 is the GPT-2 tokenizer from the shared data, loaded once.
func gpt2(t *testing.T) *tokenize.Tokenizer {
	t.Helper()
	dir := testfiles.Path(t, "tokenizers/gpt2")
	gpt2Once.Do(func() { gpt2Once.tok, gpt2Once.err = spec.Load(context.Background(), dir, spec.Options{}) })
	if gpt2Once.err != nil {
		t.Fatal(gpt2Once.err)
	}
	return gpt2Once.tok
}

// sampleTexts are the documents of the GPT-2 test dataset.
var sampleTexts = []string{
	"First Citizen:\nBefore we proceed any further, hear me speak.",
	"All:\nSpeak, speak.",
	"Grüße, 世界! <tags> & \"quotes\"",
	"",
	"You are all resolved rather to die than to famish?",
}

// tokenizeDataset makes a dataset in dir with `tokenize run`'s pipeline and the GPT-2
// tokenizer, and returns each document's ids (with the EOD; empty texts are dropped).
func tokenizeDataset(t *testing.T, dir string, texts []string) [][]int {
	t.Helper()
	tok := gpt2(t)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	var jsonl bytes.Buffer
	var want [][]int
	for _, text := range texts {
		line, _ := json.Marshal(map[string]string{"text": text})
		jsonl.Write(append(line, '\n'))
		if text != "" {
			want = append(want, append(tok.Encode(text), tok.EOD()))
		}
	}
	if err := os.WriteFile(in, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	job := &pipelines.TokenizeRun{Inputs: []string{in}, Store: openStore(t, dir), Name: filepath.Base(dir),
		Tokenizer: tok, TokSpec: "gpt2", AppendEOD: true, Workers: 1}
	if _, _, err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return want
}

// writeDataset makes a dataset in dir with one shard per element of shardDocs.
func writeDataset(t *testing.T, dir string, tok shards.TokenizerInfo, shardDocs ...[][]int) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, dir)
	dtype := shards.DTypeForVocab(tok.VocabSize)
	m := shards.NewManifest(tok, dtype, shards.NewSource(nil, "test"))
	for i, docs := range shardDocs {
		w, err := shards.NewWriter(ctx, st, fmt.Sprintf("data_text_document_%03d", i), dtype)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if err := w.AddDocument(d); err != nil {
				t.Fatal(err)
			}
		}
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add("", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T, location string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), location, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// gpt2Info is the manifest's description of the GPT-2 tokenizer.
func gpt2Info(t *testing.T) shards.TokenizerInfo { return tokenizerInfo(gpt2(t)) }

// catIDs runs `shards cat LOC --doc k` and decodes its output.
func catIDs(t *testing.T, loc string, k int, extra ...string) []int {
	t.Helper()
	out := mustRun(t, append([]string{"cat", loc, "--doc", fmt.Sprint(k)}, extra...)...)
	var ids []int
	if err := json.Unmarshal([]byte(out), &ids); err != nil || !strings.HasSuffix(out, "]\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("cat %s --doc %d: %q is not one JSON array line (%v)", loc, k, out, err)
	}
	return ids
}

// infoJSON runs `shards info LOC --json` and decodes its output.
func infoJSON(t *testing.T, loc string, extra ...string) map[string]any {
	t.Helper()
	out := mustRun(t, append([]string{"info", loc, "--json"}, extra...)...)
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	return v
}

func TestInfo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sample")
	want := tokenizeDataset(t, dir, sampleTexts)
	tok := gpt2(t)
	var tokens int
	for _, ids := range want {
		tokens += len(ids)
	}

	out := mustRun(t, "info", dir)
	for _, s := range []string{dir, "gpt2", tok.Fingerprint()[:12], "vocab 50257", "eod 50256", "uint16",
		fmt.Sprintf("documents  %d", len(want)), fmt.Sprintf("tokens     %d", tokens),
		fmt.Sprintf("sample_text_document  %d documents  %d tokens", len(want), tokens), "source", "tokenizer_spec: gpt2"} {
		if !strings.Contains(out, s) {
			t.Errorf("info does not show %q:\n%s", s, out)
		}
	}

	v := infoJSON(t, dir)
	m := v["tokenizer"].(map[string]any)
	if v["location"] != dir || v["documents"] != float64(len(want)) || v["tokens"] != float64(tokens) ||
		v["num_shards"] != 1.0 || v["token_bytes"] != float64(2*tokens) || v["dtype"] != "uint16" ||
		m["fingerprint"] != tok.Fingerprint() || m["eod_id"] != 50256.0 {
		t.Errorf("info --json: %v", v)
	}
	if s := v["shards"].([]any)[0].(map[string]any); s["prefix"] != "sample_text_document" || len(s["bin_sha256"].(string)) != 64 {
		t.Errorf("info --json shards: %v", v["shards"])
	}

	// A bare GPT-NeoX prefix: counts from the .idx.
	for _, loc := range []string{filepath.Join(dir, "sample_text_document"), filepath.Join(dir, "sample_text_document.idx")} {
		out := mustRun(t, "info", loc)
		if !strings.Contains(out, "no manifest") || !strings.Contains(out, fmt.Sprintf("documents  %d", len(want))) {
			t.Errorf("info %s:\n%s", loc, out)
		}
		if v := infoJSON(t, loc); v["documents"] != float64(len(want)) || v["tokens"] != float64(tokens) {
			t.Errorf("info --json %s: %v", loc, v)
		}
	}

	wantFailure(t, 1, []string{"manifest.json", "does not exist", "HINT"}, "info", t.TempDir())
	missing := filepath.Join(t.TempDir(), "nope")
	wantFailure(t, 1, []string{missing, "no such dataset directory"}, "info", missing)
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("info created %s", missing)
	}
}

func TestVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sample")
	want := tokenizeDataset(t, dir, sampleTexts)
	out := mustRun(t, "verify", dir)
	if out != fmt.Sprintf("ok: %s: 1 shard, %d documents, %d tokens; checksums, structure and counts match the manifest\n", dir, len(want), countTokens(want)) {
		t.Errorf("verify of a good dataset: %q", out)
	}
	bin := filepath.Join(dir, "sample_text_document.bin")
	idx := filepath.Join(dir, "sample_text_document.idx")
	good, _ := os.ReadFile(bin)
	goodIdx, _ := os.ReadFile(idx)

	t.Run("stray shard", func(t *testing.T) {
		stray := filepath.Join(dir, "old_text_document.bin")
		os.WriteFile(stray, []byte("x"), 0o644)
		defer os.Remove(stray)
		// The contract: verify exits 1 on any problem, warnings included...
		out, _ := wantFailure(t, 1, []string{"1 warning and --strict"}, "verify", dir)
		if !strings.HasSuffix(out, "FAILED: "+dir+": 0 errors, 1 warning\n") {
			t.Errorf("verify with a stray file: %q", out)
		}
		// ... unless --strict=false.
		out = mustRun(t, "verify", dir, "--strict=false")
		if !strings.HasPrefix(out, "warning: "+stray+": ") || !strings.Contains(out, "\nok: ") || !strings.HasSuffix(out, ", 1 warning\n") {
			t.Errorf("verify --strict=false with a stray file: %q", out)
		}
	})

	t.Run("flipped byte", func(t *testing.T) {
		bad := slices.Clone(good)
		bad[len(bad)/2] ^= 1
		os.WriteFile(bin, bad, 0o644)
		defer os.WriteFile(bin, good, 0o644)
		out, errOut := wantFailure(t, 1, []string{bin, "checksum", dir + " failed: 1 error"}, "verify", dir)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: "+bin+": checksum mismatch: sha256 is ") ||
			!strings.Contains(lines[0], "---> HINT: ") || lines[1] != "FAILED: "+dir+": 1 error, 0 warnings" {
			t.Errorf("verify stdout: %q", out)
		}
		if !strings.Contains(errOut, lines[0]) {
			t.Errorf("stderr %q does not quote the first problem", errOut)
		}
	})

	// A directory where the .bin should be (a cp -r gone wrong) is named as one:
	// verify called it "does not exist", cat and train "mmap ...: no such device".
	t.Run("directory in place of the bin", func(t *testing.T) {
		os.Remove(bin)
		os.Mkdir(bin, 0o755)
		defer os.WriteFile(bin, good, 0o644)
		defer os.Remove(bin)
		out, _ := wantFailure(t, 1, []string{bin, "is a directory"}, "verify", dir)
		if !strings.HasPrefix(out, "error: "+bin+": file missing: is a directory, not a file") {
			t.Errorf("verify stdout: %q", out)
		}
		_, errOut := wantFailure(t, 1, []string{bin, "is a directory, not a file", "HINT"}, "cat", dir, "--doc", "0")
		if strings.Contains(errOut, "no such device") {
			t.Errorf("cat: %q", errOut)
		}
	})

	t.Run("truncated idx", func(t *testing.T) {
		os.WriteFile(idx, goodIdx[:len(goodIdx)-5], 0o644)
		defer os.WriteFile(idx, goodIdx, 0o644)
		out, _ := wantFailure(t, 1, []string{idx}, "verify", dir)
		if !strings.Contains(out, "error: "+idx+": checksum mismatch") || !strings.Contains(out, "error: "+idx+": file truncated at byte ") {
			t.Errorf("verify stdout: %q", out)
		}
		// The bare prefix: structure only.
		out, _ = wantFailure(t, 1, []string{idx, "truncated"}, "verify", strings.TrimSuffix(idx, ".idx"))
		if strings.Contains(out, "checksum") || !strings.Contains(out, "FAILED: ") {
			t.Errorf("verify of the bare prefix: %q", out)
		}
	})

	t.Run("missing bin", func(t *testing.T) {
		os.Rename(bin, bin+".away")
		defer os.Rename(bin+".away", bin)
		out, _ := wantFailure(t, 1, []string{bin}, "verify", dir)
		if !strings.Contains(out, "error: "+bin+": file missing: does not exist") {
			t.Errorf("verify stdout: %q", out)
		}
	})

	t.Run("bare prefix", func(t *testing.T) {
		out := mustRun(t, "verify", filepath.Join(dir, "sample_text_document"))
		if !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "no manifest") {
			t.Errorf("verify of a bare prefix: %q", out)
		}
	})

	t.Run("shards without a manifest", func(t *testing.T) {
		neox := filepath.Dir(writeMergedNeoX(t))
		out, _ := wantFailure(t, 1, []string{"manifest.json", "1 GPT-NeoX shard without a manifest", "shards verify " + neox + "/neox_text_document"}, "verify", neox)
		if !strings.HasPrefix(out, "error: "+neox+"/manifest.json: file missing: does not exist ---> HINT: it holds 1 GPT-NeoX shard without a manifest") || strings.Contains(out, "re-run") {
			t.Errorf("verify stdout: %q", out)
		}
		// info says so too, with its own command.
		wantFailure(t, 1, []string{"no manifest.json", "1 GPT-NeoX shard without a manifest", "shards info " + neox + "/neox_text_document"}, "info", neox)
	})

	t.Run("merged doc_idx", func(t *testing.T) {
		prefix := writeMergedNeoX(t)
		out, _ := wantFailure(t, 1, []string{"--allow-merged-doc-idx"}, "verify", prefix)
		if !strings.Contains(out, "error: "+prefix+".idx: doc_idx was never filled in") {
			t.Errorf("verify stdout: %q", out)
		}
		out = mustRun(t, "verify", prefix, "--allow-merged-doc-idx", "--strict=false")
		if !strings.HasPrefix(out, "warning: "+prefix+".idx: ") || !strings.HasSuffix(out, "1 warning\n") {
			t.Errorf("verify --allow-merged-doc-idx: %q", out)
		}
		if ids := catIDs(t, prefix, 2, "--allow-merged-doc-idx"); !slices.Equal(ids, []int{7, 8, 9}) {
			t.Errorf("cat of a merged shard: %v", ids)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		code, _, errOut := runShardsCtx(t, ctx, "verify", dir)
		if code != 1 || errOut != "shards verify: interrupted\n" {
			t.Errorf("verify with a canceled context: exit %d, %q", code, errOut)
		}
	})
}

// writeMergedNeoX writes a GPT-NeoX shard as merge_datasets.py leaves it (doc_idx [0]) and
// returns its prefix.
func writeMergedNeoX(t *testing.T) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "neox_text_document")
	var idx bytes.Buffer
	if err := shards.WriteIndex(&idx, shards.Uint16, []int32{2, 1, 3}, []int64{0}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(prefix+".idx", idx.Bytes(), 0o644)
	os.WriteFile(prefix+".bin", []byte{1, 0, 2, 0, 3, 0, 7, 0, 8, 0, 9, 0}, 0o644)
	return prefix
}

func countTokens(docs [][]int) int {
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	return n
}

// TestRecordsLine: `shards info` says what the run dropped, split by split, with the
// bad records by reason.
func TestRecordsLine(t *testing.T) {
	got := recordsLine([]shards.SplitRecords{
		{Split: "", Bad: 2, Empty: 1, BadReasons: map[string]int64{"missing_text": 1, "invalid_json": 1}},
		{Split: "val"},
		{Split: "test", InvalidUTF8: 3, Truncated: 1, Filtered: 4, BadReasons: map[string]int64{"invalid_utf8": 3, "corrupt": 1}},
	})
	want := "train: 2 bad skipped, 1 empty dropped (invalid_json 1, missing_text 1); val: none dropped; " +
		"test: 4 of other subsets dropped, 3 kept with invalid UTF-8 replaced, 1 damaged streams kept up to the damage (corrupt 1, invalid_utf8 3)"
	if got != want {
		t.Fatalf("recordsLine:\n%s\nwant\n%s", got, want)
	}
}
