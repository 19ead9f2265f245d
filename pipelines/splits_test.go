package pipelines

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/prep"
	"gptkit/shards"
)

// TestTokenizeRunSplits writes three splits into one directory: one manifest listing every
// shard with its split, GPT-NeoX names per split, and each split's documents in order.
func TestTokenizeRunSplits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	splits := splitCorpus(t, dir)
	tok := gpt2(t)
	st := dirStore(t, filepath.Join(dir, "out"))
	run := &TokenizeRun{Splits: splits, Store: st, Dir: "ds", Name: "sh", Tokenizer: tok, AppendEOD: true, ShardBytes: 8 << 10}
	m, stats, err := run.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := shards.Verify(ctx, st, "ds"); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	ds, err := shards.OpenDataset(ctx, st, "ds", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if len(stats.Splits) != 3 || stats.Shards != len(m.Shards) || stats.Docs != m.Documents || stats.Tokens != m.Tokens {
		t.Fatalf("stats %+v do not match the manifest (%d shards, %d docs, %d tokens)", stats, len(m.Shards), m.Documents, m.Tokens)
	}
	var doc int64
	for i, sp := range splits {
		ss := stats.Splits[i]
		var entries []shards.ShardInfo
		for _, s := range m.Shards {
			if s.Split == sp.Split {
				entries = append(entries, s)
			}
		}
		if len(entries) != ss.Shards || ss.Split != sp.Split {
			t.Fatalf("split %s: %d manifest entries, stats say %+v", sp.Split, len(entries), ss)
		}
		for k, s := range entries {
			if want := ShardPrefix("sh", sp.Split, k); s.Prefix != want {
				t.Errorf("split %s shard %d is %s, want %s", sp.Split, k, s.Prefix, want)
			}
		}
		// The split's documents, in order, are the inputs' non-empty texts.
		var texts []string
		rs, err := prep.ReadDocs(ctx, sp.Inputs, prep.ReadOptions{}, func(d prep.Doc) error {
			texts = append(texts, d.Text)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ss.Docs != int64(len(texts)) || ss.Empty != rs.Empty || ss.TextBytes != rs.TextBytes || ss.BytesIn != rs.Bytes {
			t.Errorf("split %s: stats %+v, the reader counts %+v", sp.Split, ss, rs)
		}
		for _, text := range texts {
			if want := append(tok.Encode(text), tok.EOD()); !slices.Equal(ds.Tokens(doc), want) {
				t.Fatalf("split %s: document %d differs", sp.Split, doc)
			}
			doc++
		}
	}
	if n := len(m.Shards); n < 20 || m.Shards[0].Prefix != "sh_text_document" || m.Shards[n-1].Prefix != "sh_test_text_document" {
		t.Fatalf("want ≥20 shards from sh_text_document to sh_test_text_document, got %d: %+v", n, m.Shards)
	}
	if m.Source["splits"] == nil {
		t.Error("the manifest's source does not list the splits' inputs")
	}
}

func TestShardPrefix(t *testing.T) {
	for _, tc := range []struct {
		split string
		k     int
		want  string
	}{
		{"", 0, "enron_text_document"},
		{"", 1, "enron_text_document_001"},
		{"train", 12, "enron_text_document_012"},
		{"val", 0, "enron_val_text_document"},
		{"test", 3, "enron_test_text_document_003"},
		{"val", 1000, "enron_val_text_document_1000"},
	} {
		if got := ShardPrefix("enron", tc.split, tc.k); got != tc.want {
			t.Errorf("ShardPrefix(enron, %q, %d) = %s, want %s", tc.split, tc.k, got, tc.want)
		}
	}
}

func TestTokenizeRunRejectsBadSplits(t *testing.T) {
	in := []string{"x.jsonl"}
	for _, tc := range []struct {
		name    string
		run     TokenizeRun
		mention string
	}{
		{"train twice", TokenizeRun{Splits: []SplitInputs{{"", in}, {"train", in}}}, "twice"},
		{"bad name", TokenizeRun{Splits: []SplitInputs{{"va/l", in}}}, "split"},
		{"no inputs", TokenizeRun{Splits: []SplitInputs{{"val", nil}}}, "no inputs"},
		{"inputs and splits", TokenizeRun{Inputs: in, Splits: []SplitInputs{{"val", in}}}, "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run
			r.Store, r.Name, r.Tokenizer = dirStore(t, t.TempDir()), "a", gpt2(t)
			if _, _, err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Run = %v, want an error mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestTokenizeRunWorkersByteIdentical: every output byte (shards and manifest) is the same
// with 1 and 3 workers, unsplit and split.
func TestTokenizeRunWorkersByteIdentical(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	splits := splitCorpus(t, dir)
	tok := gpt2(t)
	for _, split := range []bool{false, true} {
		var snaps []map[string]string
		for _, workers := range []int{1, 3} {
			out := t.TempDir()
			run := &TokenizeRun{Store: dirStore(t, out), Name: "w", Tokenizer: tok, AppendEOD: true, Workers: workers, ShardBytes: 8 << 10}
			run.hooks.now = fixedClock
			if split {
				run.Splits = splits
			} else {
				run.Inputs = splits[0].Inputs
			}
			if _, _, err := run.Run(ctx); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, snapshot(t, out))
		}
		if len(snaps[0]) < 10 {
			t.Fatalf("only %d files", len(snaps[0]))
		}
		sameFiles(t, "3 workers vs 1", snaps[1], snaps[0])
	}
}

// TestTokenizeRunBadRecords: by default a bad record fails the run, naming its line (as
// `tokenize run` always has); with SkipBad it is counted, with an example, and skipped.
func TestTokenizeRunBadRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte("{\"text\":\"one\"}\n{\"text\": 12}\nnot json\n{\"text\":\"two\"}\n"), 0o644)
	run := &TokenizeRun{Inputs: []string{in}, Store: dirStore(t, filepath.Join(dir, "fail")), Name: "a", Tokenizer: gpt2(t), AppendEOD: true}
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
	run.Store, run.SkipBad = dirStore(t, filepath.Join(dir, "skip")), true
	m, stats, err := run.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Documents != 2 || stats.Bad != 2 || stats.Splits[0].Bad != 2 || stats.Splits[0].BadRecords == nil || len(stats.Splits[0].BadRecords.Examples) != 2 {
		t.Fatalf("%d documents, stats %+v", m.Documents, stats)
	}
}
