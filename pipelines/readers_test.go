package pipelines

import (
	"context"
	"testing"
	"time"
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
