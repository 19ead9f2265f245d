package pipelines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/shards"
	"gptkit/storage"
)

// overwriteInput writes n JSONL documents to dir/name, the line bad (from 1, 0 for
// none) holding a text that is no string.
func overwriteInput(t *testing.T, dir, name string, n, bad int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == bad {
			b.WriteString("{\"text\": 5}\n")
			continue
		}
		fmt.Fprintf(&b, "{\"text\": \"document %d %s\"}\n", i, strings.Repeat("words and more words ", 1+i%13))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// shardFiles lists the .bin and .idx keys of st.
func shardFiles(t *testing.T, st storage.Store) []string {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, in := range infos {
		if strings.HasSuffix(in.Key, ".bin") || strings.HasSuffix(in.Key, ".idx") {
			keys = append(keys, in.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// TestOverwriteReplacesWhole: --overwrite over a dataset of many shards with one of
// fewer leaves only the new shards (`shards verify` once failed on the old ones); over
// a manifest that is not JSON it succeeds (it once failed after all the work, blaming
// another writer); and a replacing run that fails part way leaves no manifest over
// shards it had already replaced, rather than the old one.
func TestOverwriteReplacesWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := overwriteInput(t, dir, "good.jsonl", 600, 0)
	out := filepath.Join(dir, "out")
	st := dirStore(t, out)
	small := &TokenizeRun{Inputs: []string{good}, Store: st, Name: "a", Tokenizer: gpt2(t), AppendEOD: true, ShardBytes: 4 << 10, Resume: true}
	if _, _, err := small.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(shardFiles(t, st)); n < 8 {
		t.Fatalf("%d shard files, want several shards", n)
	}

	big := *small
	big.ShardBytes, big.Overwrite = 0, true
	m, _, err := big.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range m.Shards {
		key := shards.ShardKey("", s)
		want = append(want, key+".bin", key+".idx")
	}
	slices.Sort(want)
	if got := shardFiles(t, st); !slices.Equal(got, want) {
		t.Fatalf("after --overwrite: shard files %v, want the new manifest's %v", got, want)
	}
	if problems, err := shards.Verify(ctx, st, ""); err != nil || len(problems) > 0 {
		t.Fatalf("verify after --overwrite: %v %v", problems, err)
	}

	if err := os.WriteFile(filepath.Join(out, shards.ManifestName), []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := big.Run(ctx); err != nil {
		t.Fatalf("--overwrite over a manifest that is not JSON: %v", err)
	}

	failing := *small
	failing.Inputs, failing.Overwrite = []string{overwriteInput(t, dir, "bad.jsonl", 600, 301)}, true
	if _, _, err := failing.Run(ctx); err == nil || !strings.Contains(err.Error(), "line 301") {
		t.Fatalf("a replacing run over a bad line: %v, want an error naming line 301", err)
	}
	if _, err := shards.ReadManifest(ctx, st, ""); !errors.Is(err, shards.ErrMissing) {
		t.Fatalf("a replacing run that failed left a manifest: %v", err)
	}
}

// A run that starts over (its journal is of another job: the shard size changed
// after a failure) or that finishes an --overwrite whose manifest an interrupted
// run had already removed leaves only the new manifest's shards: the earlier
// run's, which no manifest names any more, went only when a manifest listed
// them, and `shards verify` failed on a run that had succeeded. Files not named
// as the run's shards stay.
func TestStartOverRemovesEarlierShards(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	st := &listRecorder{Store: dirStore(t, out)}
	small := &TokenizeRun{Inputs: []string{overwriteInput(t, dir, "bad.jsonl", 600, 450)}, Store: st, Name: "a", Tokenizer: gpt2(t), AppendEOD: true, ShardBytes: 4 << 10, Resume: true}
	if _, _, err := small.Run(ctx); err == nil {
		t.Fatal("a run over a bad line succeeded")
	}
	if n := len(shardFiles(t, st.Store)); n < 8 {
		t.Fatalf("%d shard files after the failed run, want several shards", n)
	}
	others := []string{"notes.bin", "b_text_document.idx", "a_b_text_document.bin", "a_val_text_document.idx", "a_text_document_text_document.bin", "a_text_document_01.bin"}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(out, name), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := *small
	big.Inputs, big.ShardBytes = []string{overwriteInput(t, dir, "good.jsonl", 600, 0)}, 0
	m, stats, err := big.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Restarted == "" {
		t.Fatal("the second run resumed; the test needs it to start over")
	}
	want := slices.Clone(others)
	for _, s := range m.Shards {
		key := shards.ShardKey("", s)
		want = append(want, key+".bin", key+".idx")
	}
	slices.Sort(want)
	if got := shardFiles(t, st.Store); !slices.Equal(got, want) {
		t.Fatalf("after starting over: shard files %v, want the new manifest's and the others %v", got, want)
	}
	// The dataset is at the store's root: the run lists only keys named as its
	// shards, not the whole store (an S3 bucket's root).
	for _, p := range st.prefixes {
		if !strings.HasPrefix(p, "a") {
			t.Errorf("the run listed prefix %q of the store; want only keys of its name %q", p, "a")
		}
	}
}

// listRecorder is a storage.Store that records the prefixes listed.
type listRecorder struct {
	storage.Store
	mu       sync.Mutex
	prefixes []string
}

func (l *listRecorder) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	l.mu.Lock()
	l.prefixes = append(l.prefixes, prefix)
	l.mu.Unlock()
	return l.Store.List(ctx, prefix)
}

// A finished dataset whose input changed since (its time, here) is refused naming
// the input and what changed, not "other inputs, tokenizer or settings".
func TestRerunNamesChangedInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := overwriteInput(t, dir, "in.jsonl", 50, 0)
	r := &TokenizeRun{Inputs: []string{in}, Store: dirStore(t, filepath.Join(dir, "out")), Name: "a", Tokenizer: gpt2(t), AppendEOD: true, Resume: true}
	if _, _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(in, later, later); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "its inputs changed (now "+in) || !strings.Contains(err.Error(), "; was "+in) || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("a rerun after the input's time changed: %v", err)
	}
}

// The journal's restart reason for an input given under another spelling names
// the spelling, not a change of size and time that did not happen.
func TestJobChangesNamesSpelling(t *testing.T) {
	in := jobInput{Name: "a.jsonl", Size: 10, ModTime: "T"}
	a := &jobDesc{Splits: []jobSplit{{Inputs: []jobInput{in}}}}
	in.Name = "./a.jsonl"
	b := &jobDesc{Splits: []jobSplit{{Inputs: []jobInput{in}}}}
	if got := a.changes(b); got != "input 1 named ./a.jsonl, was a.jsonl (give it as the run that made the journal did)" {
		t.Errorf("changes = %q", got)
	}
}

// A first run, with no earlier run's journal or manifest in its directory,
// removes nothing, even files named as its shards would be.
func TestFirstRunRemovesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(out, "a_text_document_099.bin")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &TokenizeRun{Inputs: []string{overwriteInput(t, dir, "in.jsonl", 50, 0)}, Store: dirStore(t, out), Name: "a", Tokenizer: gpt2(t), AppendEOD: true, Resume: true}
	if _, _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a first run removed a file it did not write: %v", err)
	}
}

// An input listed twice (upsampled) and unchanged is no change.
func TestInputsChangedCountsRepeats(t *testing.T) {
	in := jobInput{Name: "a.jsonl", Size: 10, ModTime: "T"}
	d := &jobDesc{Splits: []jobSplit{{Inputs: []jobInput{in, in}}}}
	var recorded []any
	for _, s := range d.inputList() {
		recorded = append(recorded, s)
	}
	if got := d.inputsChanged(recorded); got != "" {
		t.Errorf("the same inputs, one twice: %q", got)
	}
	if got := d.inputsChanged(recorded[:1]); got != "now a.jsonl (10 bytes, modified T)" {
		t.Errorf("an input added a second time: %q", got)
	}
}
