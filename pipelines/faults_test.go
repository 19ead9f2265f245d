package pipelines

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeDamagedDataset: a finished dataset of the same job that has lost a shard file
// is not "already complete": the run makes it again, byte for byte, and says why (issue
// 15, item 2).
func TestResumeDamagedDataset(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	out := t.TempDir()
	if _, _, err := resumeJob(t, corpusDir, out, tok).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, out)
	idx, _ := filepath.Glob(filepath.Join(out, "*_text_document_*.idx"))
	if len(idx) < 2 {
		t.Fatalf("%d shards", len(idx))
	}
	os.Remove(idx[1])
	_, stats, err := resumeJob(t, corpusDir, out, tok).Run(context.Background())
	if err != nil || stats.AlreadyComplete || !strings.Contains(stats.Restarted, "damaged") {
		t.Fatalf("rerun over a damaged dataset: %v, %+v", err, stats)
	}
	sameFiles(t, "redone", snapshot(t, out), want)
}
