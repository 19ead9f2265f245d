package pipelines

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gptkit/storage"
	"gptkit/tokenize"
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

// fullDiskHelper runs `tokenize run` into loc with files limited to 256 KiB (RLIMIT_FSIZE:
// a write past it fails with EFBIG, as a full disk's fails with ENOSPC) and prints its
// error.
func fullDiskHelper(loc, input string) int {
	lim := syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	st, err := storage.Open(context.Background(), loc, storage.Options{})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	tok := tokenize.NewCharsFromText("abcdefghijklmnopqrstuvwxyz0123456789 ", "alnum") // no shared files needed
	run := &TokenizeRun{Inputs: []string{input}, Store: st, Name: "full", Tokenizer: tok, Workers: 1}
	_, _, err = run.Run(context.Background())
	fmt.Println("error:", err)
	return 0
}

// TestFullDiskLeavesNothingVisible: a run whose writes fail for want of space fails with
// the write's error and leaves no manifest, no shard under a final name and no temporary
// file behind.
func TestFullDiskLeavesNothingVisible(t *testing.T) {
	input := filepath.Join(t.TempDir(), "in.jsonl")
	var b strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&b, "{\"text\": \"document %d of a corpus too big for the disk\"}\n", i)
	}
	os.WriteFile(input, []byte(b.String()), 0o644)
	dir := filepath.Join(t.TempDir(), "ds")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPTKIT_FULLDISK_RUN="+dir, "GPTKIT_CRASH_INPUT="+input)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "error: ") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	assertNothingVisible(t, dirStore(t, dir))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a failed run left %s", e.Name())
		}
	}
}
