package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/opencount"
	"gptkit/shards"
)

// TestPrepReadsPreviousManifestTwice: a rerun of prep over its damaged dataset read
// the dataset's manifest.json three times: prep's own check, cli.PreviousManifest to
// plan the tokenizer files stored beside the data, and the run's check. Now the run
// hands its read to that plan (TokenizeRun.PlanTokenizerFiles), under its lock and
// before any shard is written; the files are stored and listed as before.
func TestPrepReadsPreviousManifestTwice(t *testing.T) {
	in := t.TempDir()
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"text\": \"document %d\"}\n", i)
	}
	a := writeFile(t, in, "a.jsonl", []byte(b.String()))
	chars := writeFile(t, in, "chars.json", []byte(`{"chars": ["d", "o", "c", "u", "m", "e", "n", "t", " ", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"], "name": "digits", "type": "char"}`))
	dir := t.TempDir()
	args := []string{"custom", "--name", "c", "-d", dir, "--tokenizer", chars, "--progress", "off", "--shard-size", "1KiB", "--append-eod=false", "--input", a}
	mustPrep(t, args...)
	ds := filepath.Join(dir, "c")
	bins, _ := filepath.Glob(filepath.Join(ds, "c_text_document_*.bin"))
	if len(bins) < 2 {
		t.Fatalf("%d shards, want several", len(bins))
	}
	os.Remove(bins[1])
	opens := opencount.Watch(t, shards.ManifestName, ds)
	before := -1 // the opens before the first shard: of the previous manifest
	testShardHook = func(shards.ShardInfo) {
		if before < 0 {
			before = opens()
		}
	}
	t.Cleanup(func() { testShardHook = nil })
	out, errOut := mustPrep(t, args...)
	if strings.Contains(out, "already complete") || !strings.Contains(errOut, "damaged") {
		t.Fatalf("a shard deleted: the rerun did not redo the dataset:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if before != 2 {
		t.Errorf("the rerun opened %s %d times before its first shard, want twice (prep's check, the run's)", shards.ManifestName, before)
	}
	var names []string
	entries, _ := os.ReadDir(ds)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !strings.Contains(strings.Join(names, " "), "chars.json") {
		t.Errorf("no chars.json beside the data: %v", names)
	}
}
