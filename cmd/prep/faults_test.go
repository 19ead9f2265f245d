package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// faultCorpus is n JSONL lines of generated text.
func faultCorpus(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"text\": \"document %d: %x and some words to tokenize\"}\n", i, uint32(i)*2654435761)
	}
	return []byte(b.String())
}

// TestTruncatedInputFails: a .jsonl.zst cut short (97% kept) fails the run, naming the
// file and the offset, instead of counting as one bad record and exiting 0; with
// --accept-truncated the run keeps what precedes the cut and the report says how many
// bytes were not read (issue 15, item 3).
func TestTruncatedInputFails(t *testing.T) {
	in := t.TempDir()
	data := zst(t, faultCorpus(50000))
	cut := writeFile(t, in, "cut.jsonl.zst", data[:len(data)*97/100])
	args := []string{"custom", "--input", cut, "--name", "c", "--tokenizer", "char", "--progress", "off"}

	code, _, errOut := runPrep(t, append(args, "-d", t.TempDir())...)
	if code != 1 || !strings.Contains(lastLine(errOut), cut+" line ") || !strings.Contains(lastLine(errOut), "bytes of data, having read") {
		t.Fatalf("exit %d, want 1 and an error naming the file and the offset:\n%s", code, errOut)
	}

	dir := t.TempDir()
	code, _, errOut = runPrep(t, append(args, "-d", dir, "--accept-truncated")...)
	if code != 0 || !strings.Contains(errOut, "truncated: 1 damaged compressed streams") {
		t.Fatalf("--accept-truncated: exit %d:\n%s", code, errOut)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "c", "prep-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Splits []struct {
			Documents int64  `json:"documents"`
			Bad       int64  `json:"bad"`
			Truncated int64  `json:"truncated"`
			Unread    *int64 `json:"unread_bytes"`
		} `json:"splits"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Splits) != 1 {
		t.Fatalf("prep-report.json: %v\n%s", err, raw)
	}
	if s := rep.Splits[0]; s.Truncated != 1 || s.Bad != 0 || s.Unread == nil || s.Documents < 40000 || s.Documents >= 50000 {
		t.Errorf("report %s", raw)
	}
}
