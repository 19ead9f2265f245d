package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gptkit/prep"
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

// TestPrepRerunChecksJob: a rerun of `prep` finds its finished dataset complete only if it
// was made the same way and is still whole: other --input, --text-key, --filter-set or
// --shard-size are refused (saying what changed and how to start over), and a dataset
// with a shard file deleted is made again (issue 15, item 2: every one of these printed
// "already complete" and exited 0).
func TestPrepRerunChecksJob(t *testing.T) {
	in := t.TempDir()
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"text\": \"document %d\", \"body\": \"other %d\", \"meta\": {\"pile_set_name\": \"Set\"}}\n", i, i)
	}
	a := writeFile(t, in, "a.jsonl", []byte(b.String()))
	other := writeFile(t, in, "b.jsonl", []byte(strings.ReplaceAll(b.String(), "document", "paper")))
	dir := t.TempDir()
	args := []string{"custom", "--name", "c", "-d", dir, "--tokenizer", "char", "--progress", "off", "--shard-size", "1KiB"}
	mustPrep(t, append(args, "--input", a)...)
	ds := filepath.Join(dir, "c")
	want := datasetDocs(t, ds)

	out, _ := mustPrep(t, append(args, "--input", a)...)
	if !strings.Contains(out, "already complete") {
		t.Fatalf("the same job again: %s", out)
	}
	for _, tc := range []struct {
		name    string
		extra   []string
		mention string
	}{
		{"other input", []string{"--input", other}, "inputs"},
		{"other text key", []string{"--input", a, "--text-key", "body"}, "text_key"},
		{"a filter", []string{"--input", a, "--filter-set", "Set"}, "filter_set"},
		{"other shard size", []string{"--input", a, "--shard-size", "2KiB"}, "shard_size"},
	} {
		code, out, errOut := runPrep(t, append(append([]string(nil), args...), tc.extra...)...)
		if code != 1 || !strings.Contains(lastLine(errOut), "other settings") || !strings.Contains(lastLine(errOut), tc.mention) ||
			!strings.Contains(lastLine(errOut), "--overwrite") {
			t.Errorf("%s: exit %d, want 1 and a refusal naming %s:\nstdout: %s\nstderr: %s", tc.name, code, tc.mention, out, errOut)
		}
	}

	bins, _ := filepath.Glob(filepath.Join(ds, "c_text_document_*.bin"))
	if len(bins) < 2 {
		t.Fatalf("%d shards, want several", len(bins))
	}
	os.Remove(bins[1])
	out, errOut := mustPrep(t, append(args, "--input", a)...)
	if strings.Contains(out, "already complete") || !strings.Contains(errOut, "damaged") {
		t.Fatalf("a shard deleted: the rerun did not redo the dataset:\nstdout: %s\nstderr: %s", out, errOut)
	}
	compareDocs(t, "redone", datasetDocs(t, ds), want)
}

// TestWriteHint: a shard that could not be written for want of space (or of a
// writable directory) said only "no space left on device"; now the line says what to
// do, and that a rerun keeps the finished shards. Other failures are left alone.
func TestWriteHint(t *testing.T) {
	j := &job{name: "pile-00", flags: &jobFlags{dir: "data"}}
	shardErr := func(errno error) error {
		return fmt.Errorf("shards: write pile-00_text_document.bin in data/pile-00: %w",
			fmt.Errorf("storage: write data/pile-00/pile-00_text_document.bin: %w",
				&fs.PathError{Op: "write", Path: "data/pile-00/.pile-00_text_document.bin.tmp-1", Err: errno}))
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{shardErr(syscall.ENOSPC), "no space left on device (free space on the disk of data/pile-00, or pass --dest to write the dataset elsewhere, then rerun: it keeps the finished shards)"},
		{shardErr(syscall.EROFS), "(make data/pile-00 writable, or pass --dest"},
		{shardErr(syscall.EACCES), "(make data/pile-00 writable, or pass --dest"},
	} {
		got := j.writeHint(tt.err)
		if !errors.Is(got, tt.err) || !strings.Contains(got.Error(), tt.want) {
			t.Errorf("writeHint(%v) = %v, want it to say %q", tt.err, got, tt.want)
		}
	}
	// An input that cannot be read (no read permission) is not the dataset's disk.
	input := fmt.Errorf("tokenize: %w", &prep.FileError{File: "corpus.jsonl", Err: &fs.PathError{Op: "open", Path: "corpus.jsonl", Err: syscall.EACCES}})
	if got := j.writeHint(input); got != input {
		t.Errorf("writeHint(%v) = %v, want it unchanged", input, got)
	}
	other := errors.New("prep: train/00.jsonl.zst line 3: unexpected EOF")
	if got := j.writeHint(other); got != other {
		t.Errorf("writeHint(%v) = %v, want it unchanged", other, got)
	}
}

// TestTruncatedDownloadHint: a download that is itself truncated (the server's copy is
// cut short; nothing knows its sha256) fails the tokenizing with "download it again",
// which a rerun did not do: the file was in place and failed the same way. Now the line
// says to remove it first, and doing so gets the server's (mended) copy; a local
// --input keeps "download it again".
func TestTruncatedDownloadHint(t *testing.T) {
	z := zst(t, jsonl(genPile(t, 3000, 5)))
	m := newMirror(t)
	m.put(pile00, z[:len(z)*9/10])
	data := t.TempDir()
	args := []string{"pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off"}
	for range 2 { // the rerun finds the file in place and fails the same way
		code, _, errOut := runPrep(t, args...)
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, errOut)
		}
		hasAll(t, "the error line", lastLine(errOut), filepath.Join(data, "pile-00", "downloads", pile00)+" line ",
			"(the file may be truncated or corrupt: remove it and rerun to download it again, or pass --accept-truncated")
	}
	m.put(pile00, z)
	if err := os.Remove(filepath.Join(data, "pile-00", "downloads", pile00)); err != nil {
		t.Fatal(err)
	}
	mustPrep(t, args...)

	in := t.TempDir()
	cut := writeFile(t, in, "cut.jsonl.zst", z[:len(z)*9/10])
	code, _, errOut := runPrep(t, "custom", "--input", cut, "--name", "c", "-d", t.TempDir(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	if code != 1 {
		t.Fatalf("custom: exit %d, want 1:\n%s", code, errOut)
	}
	hasAll(t, "custom's error line", lastLine(errOut), "(the file may be truncated or corrupt: download it again, or pass --accept-truncated")
}
