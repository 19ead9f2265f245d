package pipelines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gptkit/shards"
)

// TestPlanTokenizerFiles: PlanTokenizerFiles is called once a Run, with the output's
// previous manifest that the run's check reads (nil where there is none): a run, one
// of local parts, and one part of a partitioned run (with the run's manifest, not its
// part's); what it returns is listed in the manifest, and its error ends the run
// before any manifest is written.
func TestPlanTokenizerFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "a.jsonl")
	os.WriteFile(in, []byte(strings.Repeat(`{"text":"hello world"}`+"\n", 20)), 0o644)
	for _, tc := range []struct {
		name string
		set  func(r *TokenizeRun)
	}{
		{"single", func(r *TokenizeRun) {}},
		{"local parts", func(r *TokenizeRun) { r.Workers, r.LocalParts = 2, 2 }},
		{"part", func(r *TokenizeRun) { r.NumWorkers, r.WorkerIndex = 2, 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var calls atomic.Int32
			var prevs []*shards.Manifest
			run := &TokenizeRun{Inputs: []string{in}, Store: dirStore(t, out), Name: "a", Tokenizer: gpt2(t), AppendEOD: true, Resume: true}
			run.PlanTokenizerFiles = func(prev *shards.Manifest) ([]string, error) {
				calls.Add(1)
				prevs = append(prevs, prev)
				return []string{"tokenizer.json"}, nil
			}
			tc.set(run)
			m, _, err := run.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := calls.Load(); n != 1 || prevs[0] != nil {
				t.Fatalf("first run: planned %d times, with %v, want once with nil", n, prevs)
			}
			if got := fmt.Sprint(m.Source[shards.SourceTokenizerFiles]); tc.name != "part" && got != "[tokenizer.json]" {
				t.Errorf("source.tokenizer_files = %v, want the planned file", m.Source[shards.SourceTokenizerFiles])
			}
			if tc.name == "part" {
				return // (no run manifest until the parts are merged)
			}
			calls.Store(0)
			prevs = nil
			if _, _, err := run.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if n := calls.Load(); n != 1 || prevs[0] == nil || prevs[0].Documents != m.Documents {
				t.Fatalf("rerun: planned %d times, with %v, want once with the finished dataset's manifest", n, prevs)
			}
			// An error of the plan ends the run, before it writes a manifest.
			out2 := filepath.Join(t.TempDir(), "out")
			fail := errors.New("a file of the user's is in the way")
			r2 := *run
			r2.Store = dirStore(t, out2)
			r2.PlanTokenizerFiles = func(*shards.Manifest) ([]string, error) { return nil, fail }
			if _, _, err := r2.Run(ctx); !errors.Is(err, fail) {
				t.Fatalf("plan's error: run returned %v", err)
			}
			if _, err := os.Stat(filepath.Join(out2, shards.ManifestName)); err == nil {
				t.Error("a manifest was written after the plan failed")
			}
		})
	}
}
