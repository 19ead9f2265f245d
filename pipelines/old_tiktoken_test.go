package pipelines

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gptkit/shards"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// TestRerunDatasetOfOldTiktoken: a dataset made with --tokenizer r50k_base.tiktoken
// before the rank file loaded as the built-in (its manifest and job record the rank
// file's own fingerprint) is found complete by a rerun with the same --tokenizer, and
// one stopped part way resumes: it was refused as another job's ("the tokenizer
// changed (r50k_base, fingerprint 22b4e691dee0 ... → r50k_base, fingerprint
// 8be330532327 ...)"), or started over.
func TestRerunDatasetOfOldTiktoken(t *testing.T) {
	ctx := context.Background()
	g := gpt2(t)
	var ranks bytes.Buffer
	for id := range 50256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString(g.TokenBytes(id)), id)
	}
	file := filepath.Join(t.TempDir(), "r50k_base.tiktoken")
	os.WriteFile(file, ranks.Bytes(), 0o644)
	old, err := tokenize.LoadTiktoken(ranks.Bytes(), "r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	now, err := spec.Load(ctx, file, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("old %s %.12s, now %s %.12s", old.Name(), old.Fingerprint(), now.Name(), now.Fingerprint())
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	if _, _, err := resumeJob(t, corpusDir, out, old).Run(ctx); err != nil {
		t.Fatal(err)
	}
	_, stats, err := resumeJob(t, corpusDir, out, now).Run(ctx)
	if err != nil || !stats.AlreadyComplete {
		t.Fatalf("rerun: %v %+v", err, stats.Restarted)
	}

	// A run of the old tokenizer stopped after its second shard resumes.
	out = t.TempDir()
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	run := resumeJob(t, corpusDir, out, old)
	run.Workers = 1
	commits := 0
	run.hooks.event = func(e string) {
		if e == "journal" {
			if commits++; commits == 2 {
				cancel()
			}
		}
	}
	if _, _, err := run.Run(stop); err == nil {
		t.Fatal("the stopped run finished")
	}
	_, stats, err = resumeJob(t, corpusDir, out, now).Run(ctx)
	if err != nil || stats.Restarted != "" || stats.ResumedShards == 0 {
		t.Fatalf("resume: %v, restarted %q, %d shards resumed", err, stats.Restarted, stats.ResumedShards)
	}
}

// TestRerunPartOfOldTiktoken: the same for a part of an array job: a finished part made
// with the rank file's earlier fingerprint is found complete by a rerun, and a part
// stopped part way resumes (it was refused as another job's, or another run's).
func TestRerunPartOfOldTiktoken(t *testing.T) {
	ctx := context.Background()
	g := gpt2(t)
	var ranks bytes.Buffer
	for id := range 50256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString(g.TokenBytes(id)), id)
	}
	file := filepath.Join(t.TempDir(), "r50k_base.tiktoken")
	os.WriteFile(file, ranks.Bytes(), 0o644)
	old, err := tokenize.LoadTiktoken(ranks.Bytes(), "r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	now, err := spec.Load(ctx, file, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	part := func(tok *tokenize.Tokenizer, i int) *TokenizeRun {
		run := resumeJob(t, corpusDir, out, tok)
		run.NumWorkers, run.WorkerIndex, run.Workers = 2, i, 1
		return run
	}
	if _, _, err := part(old, 0).Run(ctx); err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	run := part(old, 1)
	commits := 0
	run.hooks.event = func(e string) {
		if e == "journal" {
			if commits++; commits == 2 {
				cancel()
			}
		}
	}
	if _, _, err := run.Run(stop); err == nil {
		t.Fatal("the stopped part finished")
	}
	_, stats, err := part(now, 0).Run(ctx)
	if err != nil || !stats.AlreadyComplete {
		t.Fatalf("rerun of the finished part: %v %+v", err, stats.Restarted)
	}
	_, stats, err = part(now, 1).Run(ctx)
	if err != nil || stats.Restarted != "" || stats.ResumedShards == 0 {
		t.Fatalf("resume of the stopped part: %v, restarted %q, %d shards resumed", err, stats.Restarted, stats.ResumedShards)
	}
	if _, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"}); err != nil {
		t.Fatalf("merge: %v", err)
	}
}

// TestPartNotBegunOfOldTiktokenRun: a part of an array job not begun when the run's
// other parts were made with the rank file's earlier fingerprint takes their job, so
// that merge-parts takes them together. It was made with the new fingerprint, and
// merge-parts refused the parts as of two runs, telling to rerun the old parts' tasks,
// which found them complete (TestRerunPartOfOldTiktoken) and merged no better.
func TestPartNotBegunOfOldTiktokenRun(t *testing.T) {
	ctx := context.Background()
	g := gpt2(t)
	var ranks bytes.Buffer
	for id := range 50256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString(g.TokenBytes(id)), id)
	}
	file := filepath.Join(t.TempDir(), "r50k_base.tiktoken")
	os.WriteFile(file, ranks.Bytes(), 0o644)
	old, err := tokenize.LoadTiktoken(ranks.Bytes(), "r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	now, err := spec.Load(ctx, file, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	out := t.TempDir()
	part := func(tok *tokenize.Tokenizer, i int) *TokenizeRun {
		run := resumeJob(t, corpusDir, out, tok)
		run.NumWorkers, run.WorkerIndex, run.Workers = 3, i, 1
		return run
	}
	if _, _, err := part(old, 0).Run(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if _, _, err := part(now, i).Run(ctx); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
	if _, err := shards.MergeParts(ctx, dirStore(t, out), "", shards.MergePartsOptions{Command: "merge"}); err != nil {
		t.Fatalf("merge: %v", err)
	}
}
