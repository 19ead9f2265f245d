package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gptkit/internal/testfiles"
)

// TestTokenizeRunFileReaders: with workers enough for several file readers
// (fileReaders, prep.ReadRangeBatchesParallel), a run's dataset is byte-identical to a
// one-worker run's, and so is that of a run killed mid-way and resumed with them (the
// documents the resumed run skips are read in order first, the rest in parallel).
func TestTokenizeRunFileReaders(t *testing.T) {
	const workers = 12
	if fileReaders(workers) < 2 {
		t.Fatalf("fileReaders(%d) = %d: the test needs several readers", workers, fileReaders(workers))
	}
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	want, events, _ := referenceRun(t, corpusDir, tok)

	out := t.TempDir()
	run := resumeJob(t, corpusDir, out, tok)
	run.Workers = workers
	if _, _, err := run.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "several readers", snapshot(t, out), want)

	for _, at := range []int{30, events["doc"] / 2} {
		out := t.TempDir()
		killAt(t, corpusDir, out, "doc", at, workers)
		run := resumeJob(t, corpusDir, out, tok)
		run.Workers = workers
		run.hooks.now = func() time.Time { return fixedClock().Add(time.Hour) }
		if _, _, err := run.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, "killed and resumed with several readers", snapshot(t, out), want)
	}
}

// TestTokenizeRunOneFileInPieces: one uncompressed .jsonl of over two pieces (prep cuts
// it into byte ranges that several readers read at once) gives, with workers enough for
// several readers, the dataset a one-worker run gives, byte for byte; so does a run
// that resumes after some of its shards (the documents it skips are read piece after
// piece).
func TestTokenizeRunOneFileInPieces(t *testing.T) {
	const workers = 12
	text := string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := 0; b.Len() < 4*pieceTestBytes(workers); i++ {
		at := i * 997 % (len(text) - 3000)
		enc.Encode(map[string]any{"text": text[at : at+200+i*131%2500]})
	}
	corpus := filepath.Join(t.TempDir(), "one.jsonl")
	if err := os.WriteFile(corpus, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tok := gpt2(t)
	job := func(out string, workers int) *TokenizeRun {
		run := &TokenizeRun{Splits: []SplitInputs{{Split: "train", Inputs: []string{corpus}}}, Store: dirStore(t, out), Name: "one",
			Tokenizer: tok, AppendEOD: true, ShardBytes: 1 << 20, Resume: true, Command: "prep one", Workers: workers}
		run.hooks.now = fixedClock
		return run
	}
	ref := t.TempDir()
	if _, _, err := job(ref, 1).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, ref)
	out := t.TempDir()
	if _, _, err := job(out, workers).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "one file in pieces", snapshot(t, out), want)

	// Resume: keep the first shards and the journal of a run stopped after them.
	out = t.TempDir()
	run := job(out, workers)
	ctx, cancel := context.WithCancel(context.Background())
	shards := 0
	run.hooks.event = func(e string) {
		if e == "journal" {
			if shards++; shards == 2 {
				cancel()
			}
		}
	}
	if _, _, err := run.Run(ctx); err == nil {
		t.Fatal("the run was to stop after two shards")
	}
	run = job(out, workers)
	run.hooks.now = func() time.Time { return fixedClock().Add(time.Hour) }
	_, stats, err := run.Run(context.Background())
	if err != nil || stats.ResumedShards == 0 {
		t.Fatalf("resumed: %v, %+v; want the journaled shards kept", err, stats)
	}
	sameFiles(t, "one file in pieces, resumed", snapshot(t, out), want)
}

// pieceTestBytes is the size of the pieces prep cuts an uncompressed .jsonl into with
// workers encoding (prep.ReadRangeBatchesParallel: four batches).
func pieceTestBytes(workers int) int { return 4 * batchBytes(workers) }
