package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/pipelines"
	"gptkit/shards"
	"gptkit/tokenize"
)

// TestMergeParts: `shards merge-parts` on a 3-part run refuses while a part is missing,
// naming it, then writes the manifest of a single-process run's documents; again, it is
// a no-op.
func TestMergeParts(t *testing.T) {
	tok := tokenize.NewNeoXChar()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	var jsonl bytes.Buffer
	var texts []string
	for i := range 40 {
		text := fmt.Sprintf("document %d %s", i, strings.Repeat("abc", i))
		texts = append(texts, text)
		line, _ := json.Marshal(map[string]string{"text": text})
		jsonl.Write(append(line, '\n'))
	}
	if err := os.WriteFile(in, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	part := func(i int) {
		job := &pipelines.TokenizeRun{Inputs: []string{in}, Store: openStore(t, dir), Name: "c", Tokenizer: tok,
			TokSpec: "char", AppendEOD: true, Workers: 1, NumWorkers: 3, WorkerIndex: i, ShardBytes: 200,
			Command: fmt.Sprintf("tokenize run --worker-index %d", i)}
		if _, _, err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	part(0)
	part(2)
	if info := mustRun(t, "info", filepath.Join(dir, shards.PartDir(2, 3))); !strings.Contains(info, "part       2 of 3 of a partitioned run") {
		t.Errorf("info on a part:\n%s", info)
	}
	wantFailure(t, 1, []string{"1 of 3 parts are not finished", "part 1 (parts/part-00001-of-00003: not started)",
		"--num-workers 3 --worker-index I, for I in 1", "(part 0 ran: tokenize run --worker-index 0)"}, "merge-parts", dir)
	part(1)
	out := mustRun(t, "merge-parts", dir)
	if want := fmt.Sprintf("%s/manifest.json: 40 documents, ", dir); !strings.HasPrefix(out, want) {
		t.Fatalf("stdout %q, want %q...", out, want)
	}
	d, err := shards.OpenDataset(context.Background(), openStore(t, dir), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, text := range texts {
		want := append(tok.Encode(text), tok.EOD())
		if got := d.Tokens(int64(i)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("document %d: %v, want %v", i, got, want)
		}
	}
	if !strings.Contains(mustRun(t, "verify", dir), "ok") {
		t.Error("verify")
	}
	code, again, errOut := runShards(t, "merge-parts", dir, "--num-workers", "3")
	if code != 0 || again != out || !strings.Contains(errOut, "already merged from its 3 parts") {
		t.Fatalf("second merge: exit %d, %q, %q", code, again, errOut)
	}
}
