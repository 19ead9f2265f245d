package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels/ref"
	"gptkit/shards"
	"gptkit/storage"
)

// TestOpenDataHint: the hint to set eval_steps 0 comes only with the error of a data
// set that has no valid split, not with every data-open error (issue 15, item 13).
func TestOpenDataHint(t *testing.T) {
	const hint = "set eval_steps 0"
	missing := tinyConfig(t, filepath.Join(t.TempDir(), "nowhere"))
	_, err := Run(context.Background(), missing, ref.New(), Single{}, testLogger(t))
	if err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("missing data: %v, want an error without the eval_steps hint", err)
	}
	noValid := tinyConfig(t, writeTrainOnlyDataset(t, t.TempDir()))
	_, err = Run(context.Background(), noValid, ref.New(), Single{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("no valid split: %v, want the eval_steps hint", err)
	}
}

// writeTrainOnlyDataset writes a dataset whose manifest labels its one shard "train".
func writeTrainOnlyDataset(t testing.TB, dir string) string {
	t.Helper()
	writeTinyDataset(t, dir, patternDoc(3000, 20, 1), patternDoc(100, 20, 2), 20, "tiny-fp-1")
	m := readManifestFile(t, dir)
	m.Shards = m.Shards[:1]
	m.Documents, m.Tokens = m.Shards[0].Documents, m.Shards[0].Tokens
	writeManifestFile(t, dir, m)
	return dir
}

func readManifestFile(t testing.TB, dir string) *shards.Manifest {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := shards.ReadManifest(context.Background(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeManifestFile replaces dir's manifest with m.
func writeManifestFile(t testing.TB, dir string, m *shards.Manifest) {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.WriteManifest(context.Background(), st, "", m); err != nil {
		t.Fatal(err)
	}
}
