package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunAcceptTruncated: `tokenize run` on a .jsonl.zst cut short fails naming the
// file; with --accept-truncated it keeps the documents before the cut and says, even
// with --progress off, how many bytes it did not read.
func TestRunAcceptTruncated(t *testing.T) {
	spec := alphabetSpec(t)
	data := yDocsZst(20000)
	in := filepath.Join(t.TempDir(), "cut.jsonl.zst")
	if err := os.WriteFile(in, data[:len(data)*9/10], 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off"}
	code, _, errOut := runTokenize(t, "", append(args, "--output", t.TempDir())...)
	if code != 1 || !strings.Contains(errOut, in) {
		t.Fatalf("a truncated input: exit %d, want 1 and the file named:\n%s", code, errOut)
	}
	out := t.TempDir()
	code, stdout, errOut := runTokenize(t, "", append(args, "--output", out, "--accept-truncated")...)
	if code != 0 || !strings.Contains(errOut, "--accept-truncated") || !strings.Contains(errOut, "unread_bytes=") {
		t.Fatalf("--accept-truncated: exit %d, want 0 and the damage reported:\n%s", code, errOut)
	}
	if docs := runDocs(t, out); len(docs) < 10000 || len(docs) >= 20000 {
		t.Fatalf("--accept-truncated kept %d documents of 20000 (90%% of the file): %s", len(docs), stdout)
	}
}
