package pipelines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// TestFinishedPartTouchedInput: a finished part rerun after an input's modification time
// alone changed (a copy, a touch) is complete, as shards.MergeParts takes it, rather
// than "made by a different job".
func TestFinishedPartTouchedInput(t *testing.T) {
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	if _, _, err := partRun(t, corpusDir, out, 0, 2).Run(ctx); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(corpusDir, "a.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	_, stats, err := partRun(t, corpusDir, out, 0, 2).Run(ctx)
	if err != nil || !stats.AlreadyComplete {
		t.Fatalf("rerun of a finished part after a touch: complete %v, %v", stats.AlreadyComplete, err)
	}
}

// TestLocalPartsRerunDamaged: a --parts run whose merged dataset lost a shard is not
// reported complete on its rerun: the rerun fails naming the damage and --overwrite.
// And a --parts run holds the whole run's directory: a second run into it fails at
// once, naming the first writer.
func TestLocalPartsRerunDamaged(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	out := t.TempDir()
	run := stripedJob(t, splits, out)
	run.Workers, run.LocalParts = 4, 2
	m, _, err := run.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, shards.ShardKey("", m.Shards[0])+".bin")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("rerun over a merged dataset missing a shard: %v, want an error naming the damage", err)
	}

	lock, err := storage.LockDir(ctx, dirStore(t, out), "", storage.LockOwner("another run"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	run.Overwrite = true
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Fatalf("--parts into a directory another run holds: %v, want an error naming it", err)
	}
}

// TestLocalPartsOverwriteHidesOldMerge: a --parts --overwrite rerun removes the merged
// manifest before it makes the parts again (readers once saw it over parts' shards
// being rewritten), and merges them anew.
func TestLocalPartsOverwriteHidesOldMerge(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	out := t.TempDir()
	run := stripedJob(t, splits, out)
	run.Workers, run.LocalParts = 4, 2
	if _, _, err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st := dirStore(t, out)
	var seen atomic.Int32 // 1: no manifest while a part wrote, 2: one
	run.Overwrite = true
	run.hooks.event = func(ev string) {
		if ev != "doc" || seen.Load() != 0 {
			return
		}
		if _, err := shards.ReadManifest(ctx, st, ""); errors.Is(err, shards.ErrMissing) {
			seen.CompareAndSwap(0, 1)
		} else {
			seen.CompareAndSwap(0, 2)
		}
	}
	if _, _, err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 1 {
		t.Fatalf("while the parts were made again the merged manifest was still there (state %d)", seen.Load())
	}
	if problems, err := shards.Verify(ctx, st, ""); err != nil || len(problems) > 0 {
		t.Fatalf("verify after the --overwrite merge: %v %v", problems, err)
	}
}

// TestLocalPartsOverwriteSingleRun: --parts --overwrite over a single run's dataset
// removes that run's shards, which the merge of parts does not list (they stayed on
// disk beside the parts', a second copy that shards verify reported as extra files).
func TestLocalPartsOverwriteSingleRun(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	out := t.TempDir()
	single := stripedJob(t, splits, out)
	single.Workers = 2
	if _, _, err := single.Run(ctx); err != nil {
		t.Fatal(err)
	}
	parts := stripedJob(t, splits, out)
	parts.Workers, parts.LocalParts, parts.Overwrite = 4, 2, true
	if _, _, err := parts.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st := dirStore(t, out)
	if problems, err := shards.Verify(ctx, st, ""); err != nil || len(problems) > 0 {
		t.Fatalf("verify after --parts --overwrite over a single run: %v %v", problems, err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*.bin")); len(left) > 0 {
		t.Fatalf("the single run's shards are still there: %v", left)
	}
}

// TestOverwriteMergedWithSingleRun: a single run's --overwrite over a dataset merged
// from parts removes the parts' shards and their manifests (which named shards no
// longer there), leaving a dataset that verifies clean.
func TestOverwriteMergedWithSingleRun(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	out := t.TempDir()
	parts := stripedJob(t, splits, out)
	parts.Workers, parts.LocalParts = 4, 2
	if _, _, err := parts.Run(ctx); err != nil {
		t.Fatal(err)
	}
	single := stripedJob(t, splits, out)
	single.Workers, single.Overwrite = 2, true
	if _, _, err := single.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "parts", "*", "manifest.json")); len(left) > 0 {
		t.Fatalf("parts' manifests left over shards that are gone: %v", left)
	}
	if problems, err := shards.Verify(ctx, dirStore(t, out), ""); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
}

// TestPartRerunOtherSettingsNamesChange: a finished part, then the run's merged dataset,
// rerun with other settings is refused naming what changed (the shard size, the text key,
// append-eod, the tokenizer by name, the inputs' order), not only "other inputs, tokenizer or settings".
func TestPartRerunOtherSettingsNamesChange(t *testing.T) {
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	for i := range 2 {
		if _, _, err := partRun(t, corpusDir, out, i, 2).Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		change func(r *TokenizeRun)
		want   string
	}{
		{func(r *TokenizeRun) { r.ShardBytes = 16 << 10 }, "made by a different job: shard size 8192 → 16384"},
		{func(r *TokenizeRun) { r.TextKey = "body" }, "text key text → body"},
		{func(r *TokenizeRun) { r.AppendEOD = false }, "append-eod true → false"},
		{func(r *TokenizeRun) { r.Tokenizer = tokenize.NewNeoXChar() }, "the tokenizer changed (gpt2, fingerprint "},
		{func(r *TokenizeRun) { slices.Reverse(r.Splits[0].Inputs) }, "its inputs are given in another order (was "},
	}
	for _, tc := range cases {
		r := partRun(t, corpusDir, out, 1, 2)
		tc.change(r)
		_, _, err := r.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--overwrite") {
			t.Errorf("a finished part rerun with other settings: %v, want an error with %q", err, tc.want)
		}
	}
	if _, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
	r := partRun(t, corpusDir, out, 0, 2)
	r.ShardBytes = 16 << 10
	if _, _, err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "made by another job: shard size 8192 → 16384") {
		t.Errorf("a task of a merged run rerun with another shard size: %v, want an error naming it", err)
	}
}

// TestKilledPartRerunOtherSettingsRefused: a killed task rerun with another shard size,
// while another part of its run is finished, is refused naming the change and that
// part's command (it started over under the new settings, silently making a part that
// merge-parts then refused beside the old run's); with --overwrite it starts over, and
// rerun as the run's tasks were, it resumes. With no finished part of the old run (prep
// --slurm --overwrite removed their manifests) it starts over as before.
func TestKilledPartRerunOtherSettingsRefused(t *testing.T) {
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	if _, _, err := partRun(t, corpusDir, out, 1, 2).Run(ctx); err != nil {
		t.Fatal(err)
	}
	interruptAfter(t, partRun(t, corpusDir, out, 0, 2), 2)
	r := partRun(t, corpusDir, out, 0, 2)
	r.ShardBytes = 16 << 10
	_, _, err := r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "shard size 8192 → 16384") || !strings.Contains(err.Error(), "part 1 is finished") ||
		!strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("a killed part rerun with another shard size beside a finished part: %v, want a refusal naming the change", err)
	}
	// The hint's command is this task's (part 0), not part 1's to be edited.
	if !strings.Contains(err.Error(), "tokenize run --num-workers 2 --worker-index 0") || strings.Contains(err.Error(), "--worker-index 1") {
		t.Fatalf("the hint quotes another task's command: %v, want it with this task's --worker-index 0", err)
	}
	_, stats, err := partRun(t, corpusDir, out, 0, 2).Run(ctx)
	if err != nil || stats.ResumedShards != 2 {
		t.Fatalf("the killed part rerun as its run's tasks were: kept %d shards, %v; want it resumed (2)", stats.ResumedShards, err)
	}

	// The old run's finished part gone: the killed part starts over with the new settings.
	out2 := t.TempDir()
	interruptAfter(t, partRun(t, corpusDir, out2, 0, 2), 2)
	r = partRun(t, corpusDir, out2, 0, 2)
	r.ShardBytes = 16 << 10
	if _, stats, err := r.Run(ctx); err != nil || !strings.Contains(stats.Restarted, "shard size") {
		t.Fatalf("a killed part with no finished part beside it, rerun with another shard size: restarted %q, %v", stats.Restarted, err)
	}
	// --overwrite starts it over beside a finished part of the old run.
	out3 := t.TempDir()
	if _, _, err := partRun(t, corpusDir, out3, 1, 2).Run(ctx); err != nil {
		t.Fatal(err)
	}
	interruptAfter(t, partRun(t, corpusDir, out3, 0, 2), 2)
	r = partRun(t, corpusDir, out3, 0, 2)
	r.ShardBytes, r.Overwrite = 16<<10, true
	if _, _, err := r.Run(ctx); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
}

// The restart reason and refusals name only the caller's settings that differ (prep's
// hold every input: the whole maps were printed, a screenful on a large corpus).
func TestJobChangesNamesSettings(t *testing.T) {
	a := &jobDesc{Params: map[string]string{"shard_size": "1000000", "inputs": "a.jsonl (10 bytes)", "old": "x"}}
	b := &jobDesc{Params: map[string]string{"shard_size": "2000000", "inputs": "a.jsonl (10 bytes)", "new": "y"}}
	want := `settings new (none) → "y", old "x" → (none), shard_size "1000000" → "2000000"`
	if got := a.changes(b); got != want {
		t.Errorf("changes = %q, want %q", got, want)
	}
}

// withWorkerIndex gives another task's command line this task's index, however it was
// spelt; a command without one (the index from the array job's environment) is not ok.
func TestWithWorkerIndex(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
		ok        bool
	}{
		{"tokenize run --num-workers 4 --worker-index 1 -o out a.jsonl", "tokenize run --num-workers 4 --worker-index 3 -o out a.jsonl", true},
		{"prep pile -d d --num-workers=4 --worker-index=1", "prep pile -d d --num-workers=4 --worker-index=3", true},
		{"tokenize run -worker-index 1 -num-workers 4", "tokenize run -worker-index 3 -num-workers 4", true},
		{"prep pile -d d --num-workers 4", "prep pile -d d --num-workers 4", false},
		{"tokenize run --worker-index", "tokenize run --worker-index", false},
	} {
		if got, ok := withWorkerIndex(c.cmd, 3); got != c.want || ok != c.ok {
			t.Errorf("withWorkerIndex(%q, 3) = %q, %v; want %q, %v", c.cmd, got, ok, c.want, c.ok)
		}
	}
}
