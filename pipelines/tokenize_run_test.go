package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/internal/testfiles"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// gpt2 loads the GPT-2 tokenizer once per test binary (a Tokenizer is safe for
// concurrent use; loading it takes seconds under -race).
func gpt2(t testing.TB) *tokenize.Tokenizer {
	t.Helper()
	path := testfiles.Path(t, "tokenizers/gpt2/tokenizer.json") // skips (or fails in CI) when missing
	gpt2Once.Do(func() {
		data, err := os.ReadFile(path)
		if err != nil {
			gpt2Err = err
			return
		}
		gpt2Tok, gpt2Err = tokenize.LoadHFJSON(data, "gpt2")
	})
	if gpt2Err != nil {
		t.Fatal(gpt2Err)
	}
	return gpt2Tok
}

var (
	gpt2Once sync.Once
	gpt2Tok  *tokenize.Tokenizer
	gpt2Err  error
)

func dirStore(t testing.TB, dir string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTokenizeRunMatchesGolden: tokenize run on the public parity corpus with GPT-2 gives,
// document by document, HF's golden ids plus EOD (empty documents are dropped, as
// GPT-NeoX's reader does).
func TestTokenizeRunMatchesGolden(t *testing.T) {
	ctx := context.Background()
	corpus := testfiles.Path(t, "corpora/parity.jsonl")
	golden := readGoldenIDs(t)
	tok := gpt2(t)
	out := t.TempDir()
	for _, workers := range []int{1, 3} {
		dir := filepath.Join(out, "w"+string(rune('0'+workers)))
		st := dirStore(t, dir)
		run := &TokenizeRun{Inputs: []string{corpus}, Store: st, Name: "parity", Tokenizer: tok, AppendEOD: true, Workers: workers, ShardBytes: 256 << 10}
		m, stats, err := run.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Shards < 2 || m.Shards[0].Prefix != "parity_text_document" {
			t.Fatalf("want several shards, the first named parity_text_document; got %d, %+v", stats.Shards, m.Shards[0])
		}
		ds, err := shards.OpenDataset(ctx, st, "", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var want [][]int
		for _, ids := range golden {
			if ids != nil {
				want = append(want, append(slices.Clone(ids), tok.EOD()))
			}
		}
		if ds.Len() != int64(len(want)) {
			t.Fatalf("workers %d: %d documents, want %d", workers, ds.Len(), len(want))
		}
		for i := range want {
			if got := ds.Tokens(int64(i)); !slices.Equal(got, want[i]) {
				t.Fatalf("workers %d: document %d differs", workers, i)
			}
		}
		ds.Close()
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
			t.Fatal(err)
		}
	}
}

// readGoldenIDs returns the golden ids per parity document, nil for empty texts.
func readGoldenIDs(t *testing.T) [][]int {
	t.Helper()
	data := testfiles.Read(t, "golden/gpt2.jsonl")
	var out [][]int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var d struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		if d.Text == "" {
			out = append(out, nil)
		} else {
			out = append(out, d.IDs)
		}
	}
	return out
}

func TestTokenizeRunRefusesExistingDataset(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte(`{"text":"hello world"}`+"\n"), 0o644)
	st := dirStore(t, filepath.Join(dir, "out"))
	run := &TokenizeRun{Inputs: []string{in}, Store: st, Name: "a", Tokenizer: gpt2(t), AppendEOD: true}
	if _, _, err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("second run: %v", err)
	}
	run.Overwrite = true
	if _, _, err := run.Run(ctx); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
}

func TestTokenizeRunErrorNamesLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte("{\"text\":\"ok\"}\n{\"text\":\"b\xff\"}\n{\"text\":\"zzz\"}\n"), 0o644)
	chars := tokenize.NewCharsFromText("okb\uFFFD", "chars")
	st := dirStore(t, filepath.Join(dir, "out"))
	run := &TokenizeRun{Inputs: []string{in}, Store: st, Name: "a", Tokenizer: chars}
	_, _, err := run.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "a.jsonl line 3") {
		t.Fatalf("want an error naming a.jsonl line 3, got %v", err)
	}
	if _, err := shards.ReadManifest(ctx, st, ""); !errors.Is(err, shards.ErrMissing) {
		t.Fatalf("a failed run left a manifest: %v", err)
	}
	if infos, _ := st.List(ctx, ""); len(infos) != 0 {
		t.Fatalf("a failed run left files: %v", infos)
	}
}

// TestTokenizeRunToS3 writes a dataset to MinIO in several shards and reads every document
// back through the S3 store (fetched into a local cache and mapped).
func TestTokenizeRunToS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MinIO server")
	}
	ctx := context.Background()
	srv := miniotest.Start(t)
	srv.Setenv(t)
	st, err := storage.Open(ctx, "s3://"+srv.NewBucket(t)+"/data/parity", storage.Options{S3Endpoint: srv.Endpoint, PartSize: storage.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	tok := gpt2(t)
	run := &TokenizeRun{Inputs: []string{testfiles.Path(t, "corpora/parity.jsonl")}, Store: st, Name: "parity",
		Tokenizer: tok, AppendEOD: true, ShardBytes: 256 << 10}
	m, _, err := run.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := shards.Verify(ctx, st, "")
	if err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	ds, err := shards.OpenDataset(ctx, st, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	var want [][]int
	for _, ids := range readGoldenIDs(t) {
		if ids != nil {
			want = append(want, append(slices.Clone(ids), tok.EOD()))
		}
	}
	if ds.Len() != int64(len(want)) || len(m.Shards) < 2 {
		t.Fatalf("%d documents in %d shards, want %d documents in several", ds.Len(), len(m.Shards), len(want))
	}
	for i := range want {
		if !slices.Equal(ds.Tokens(int64(i)), want[i]) {
			t.Fatalf("document %d differs", i)
		}
	}
}
