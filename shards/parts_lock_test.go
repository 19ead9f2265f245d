package shards

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gptkit/storage"
)

// TestMergePartsLocksParts: a merge while a part's task holds its writer lock (rerun
// with --overwrite, rewriting the part's shards) waits for it, then fails naming it,
// writing no manifest (it wrote one listing the part's old shards over the new ones).
// Two merges at once both succeed, one finding the other's manifest (Already).
func TestMergePartsLocksParts(t *testing.T) {
	ctx := context.Background()
	old := mergeLockWait
	mergeLockWait = 500 * time.Millisecond
	defer func() { mergeLockWait = old }()
	one := map[string][][]int{"": {{1}}, "val": {{2, 3}}}
	ts := newTestStore(t)
	writePart(t, ts, "ds", 0, 2, "j", one)
	writePart(t, ts, "ds", 1, 2, "j", one)
	st, err := storage.Open(ctx, ts.root, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	task, err := storage.LockDir(ctx, st, join("ds", PartDir(1, 2)), storage.LockOwner("tokenize run --num-workers 2 --worker-index 1 --overwrite"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = MergeParts(ctx, st, "ds", MergePartsOptions{Command: "shards merge-parts ds"})
	if !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("a merge while part 1 is being made again: %v, want it refused naming that task (ErrLocked)", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("refused after %s, want it to wait for the part (%s)", d, mergeLockWait)
	}
	if _, err := ReadManifest(ctx, st, "ds"); !errors.Is(err, ErrMissing) {
		t.Fatalf("the refused merge left a manifest (%v)", err)
	}
	task.Release()

	var wg sync.WaitGroup
	res := make([]MergeResult, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = MergeParts(ctx, st, "ds", MergePartsOptions{Command: "shards merge-parts ds"})
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("merge %d of two at once: %v", i, errs[i])
		}
	}
	if res[0].Already == res[1].Already {
		t.Errorf("two merges at once: Already %v and %v, want one", res[0].Already, res[1].Already)
	}
}
