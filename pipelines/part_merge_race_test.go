package pipelines

import (
	"context"
	"errors"
	"sync"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
)

// mergeAfterDelete runs merge just after the first Delete of key: a merge-parts that
// wrote the run's manifest between a task's removal of it and the task's lock of its
// part.
type mergeAfterDelete struct {
	storage.Store
	key   string
	merge func()
	once  sync.Once
}

func (s *mergeAfterDelete) Delete(ctx context.Context, key string) error {
	err := s.Store.Delete(ctx, key)
	if key == s.key {
		s.once.Do(s.merge)
	}
	return err
}

// TestPartOverwriteRemovesRacingMerge: a task rerun with --overwrite removes the run's
// merged manifest, then makes its part again; a merge-parts that committed in between
// (reading the part's old manifest: the task did not hold its part's lock yet) is
// removed once the task holds the lock and remakes the part, so no merged manifest
// lists a part being rewritten (it stayed, over the part's new shards).
func TestPartOverwriteRemovesRacingMerge(t *testing.T) {
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	runParts(t, corpusDir, out, 2)
	r := partRun(t, corpusDir, out, 0, 2)
	r.Overwrite = true
	merged := false
	r.Store = &mergeAfterDelete{Store: r.Store, key: shards.ManifestKey(""), merge: func() {
		if _, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"}); err != nil {
			t.Errorf("the racing merge: %v", err)
		}
		merged = true
	}}
	if _, _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !merged {
		t.Fatal("no racing merge ran")
	}
	if m, err := shards.ReadManifest(ctx, dirStore(t, out), ""); !errors.Is(err, shards.ErrMissing) {
		t.Fatalf("after part 0 was made again, the run's merged manifest of its old shards stays (%v, %v); want it removed until the parts are merged again", m != nil, err)
	}
	if _, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"}); err != nil {
		t.Fatalf("merging again: %v", err)
	}
}
