package prep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/testfiles"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// compress returns data compressed as name's suffix says: .gz gzip, .zst zstd with a
// 128 MiB window (what zstd --long=27 writes), else as it is.
func compress(t testing.TB, name string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch lower := strings.ToLower(name); {
	case strings.HasSuffix(lower, ".gz"):
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case strings.HasSuffix(lower, ".zst"):
		zw, err := zstd.NewWriter(&buf, zstd.WithWindowSize(1<<27))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		return data
	}
	return buf.Bytes()
}

// writeCorpusFile writes data into dir/name, compressed as the name says, and
// returns the path.
func writeCorpusFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, compress(t, name, []byte(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll reads files with ReadDocs, returning the documents.
func readAll(t *testing.T, files []string, opt ReadOptions) ([]Doc, Stats, error) {
	t.Helper()
	var docs []Doc
	stats, err := ReadDocs(context.Background(), files, opt, func(d Doc) error {
		docs = append(docs, d)
		return nil
	})
	return docs, stats, err
}

func TestReadDocsFormats(t *testing.T) {
	dir := t.TempDir()
	jsonl := `{"text":"one","meta":{"pile_set_name":"Enron Emails"}}` + "\n" +
		"\n" + // blank lines are skipped
		`{"text":""}` + "\r\n" + // empty texts are dropped
		`{"text":["a","b"]}` + "\r\n" +
		`{"meta":{},"text":"last, no newline"}`
	files := []string{
		writeCorpusFile(t, dir, "a.jsonl", jsonl),
		writeCorpusFile(t, dir, "b.jsonl.zst", `{"text":"zstd"}`+"\n"),
		writeCorpusFile(t, dir, "c.jsonl.gz", `{"text":"gzip"}`+"\n"),
		writeCorpusFile(t, dir, "d.JSON.GZ", `{"text":"c4"}`+"\n"+`{"text":"style"}`+"\n"),
		writeCorpusFile(t, dir, "e.txt", "whole\nfile\n\n"),
		writeCorpusFile(t, dir, "f.txt.gz", "gzipped text"),
		writeCorpusFile(t, dir, "g.txt.zst", "zstd text"),
		writeCorpusFile(t, dir, "h.txt", ""),
		writeCorpusFile(t, dir, "i.jsonl", ""),
	}
	var progressBytes, progressDocs int64
	docs, stats, err := readAll(t, files, ReadOptions{Progress: func(b, d int64) { progressBytes += b; progressDocs += d }})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{
		{"one", files[0], 1, 0, 0, 0}, {"a\n\nb", files[0], 4, 0, 0, 0}, {"last, no newline", files[0], 5, 0, 0, 0},
		{"zstd", files[1], 1, 0, 1, 0}, {"gzip", files[2], 1, 0, 2, 0}, {"c4", files[3], 1, 0, 3, 0}, {"style", files[3], 2, 0, 3, 0},
		{"whole\nfile\n\n", files[4], 0, 0, 4, 0}, {"gzipped text", files[5], 0, 0, 5, 0}, {"zstd text", files[6], 0, 0, 6, 0},
	}
	if !slices.Equal(docs, want) {
		t.Errorf("docs\n%+v\nwant\n%+v", docs, want)
	}
	total, err := TotalBytes(files)
	if err != nil {
		t.Fatal(err)
	}
	var textBytes int64
	for _, d := range want {
		textBytes += int64(len(d.Text))
	}
	wantStats := Stats{Files: len(files), Docs: int64(len(want)), Empty: 2, Bytes: total, TextBytes: textBytes}
	if stats != wantStats {
		t.Errorf("stats %+v, want %+v", stats, wantStats)
	}
	if progressBytes != total || progressDocs != int64(len(want)) {
		t.Errorf("progress reported %d bytes, %d docs; want %d, %d", progressBytes, progressDocs, total, len(want))
	}
}

func TestReadDocsTextKeyAndLongLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a long line, longer than any buffer. ", 5<<20/37) // 5 MiB
	in := `{"body":"short"}` + "\n" + `{"text":"x","body":"` + long + `"}` + "\n" + `{"body":"after"}` + "\n"
	for _, name := range []string{"long.jsonl", "long.jsonl.zst"} {
		file := writeCorpusFile(t, dir, name, in)
		docs, _, err := readAll(t, []string{file}, ReadOptions{TextKey: "body"})
		if err != nil {
			t.Fatal(err)
		}
		want := []Doc{{"short", file, 1, 0, 0, 0}, {long, file, 2, 0, 0, 0}, {"after", file, 3, 0, 0, 0}}
		if !slices.Equal(docs, want) {
			t.Errorf("%s: got %d docs, not the three written", name, len(docs))
		}
	}
}

func TestReadBatches(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	var want []string
	for i := range 100 {
		text := strings.Repeat("x", i)
		want = append(want, text)
		in.WriteString(`{"text":"` + text + `"}` + "\n")
	}
	want = want[1:] // the empty text
	file := writeCorpusFile(t, dir, "a.jsonl", in.String())
	var got []string
	var batches int
	stats, err := ReadBatches(context.Background(), []string{file}, ReadOptions{}, 500, func(b []Doc) error {
		size := 0
		for _, d := range b {
			got = append(got, d.Text)
			size += len(d.Text)
		}
		if batches++; len(b) == 0 || size-len(b[len(b)-1].Text) >= 500 {
			t.Errorf("batch %d: %d docs, %d bytes: should have closed earlier", batches, len(b), size)
		}
		return nil
	})
	if err != nil || stats.Docs != 99 {
		t.Fatalf("stats %+v, err %v", stats, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("texts differ from those written")
	}
	if batches < 9 || batches > 12 {
		t.Errorf("%d batches of 500 bytes for %d bytes of text", batches, stats.TextBytes)
	}

	// A bad line: the documents before it still come, then the error.
	bad := writeCorpusFile(t, dir, "bad.jsonl", `{"text":"a"}`+"\n"+`{"text":"b"}`+"\n"+`{"text":`+"\n")
	got = nil
	_, err = ReadBatches(context.Background(), []string{bad}, ReadOptions{OnError: Fail}, 1<<20, func(b []Doc) error {
		for _, d := range b {
			got = append(got, d.Text)
		}
		return nil
	})
	if !errors.Is(err, ErrInvalidJSON) || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got %q, err %v; want a, b, then invalid JSON", got, err)
	}
}

// parityLines returns the lines of the shared parity corpus.
func parityLines(t *testing.T) [][]byte {
	t.Helper()
	data := testfiles.Read(t, "corpora/parity.jsonl")
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// TestReadDocsParityCorpus reads the parity corpus and checks every document against
// encoding/json's "text", in order, with its line number.
func TestReadDocsParityCorpus(t *testing.T) {
	file := testfiles.Path(t, "corpora/parity.jsonl")
	var want []Doc
	var empty int64
	for i, line := range parityLines(t) {
		text, ok, err := refTextField(line, "text")
		if !ok || err != nil {
			t.Fatalf("line %d: %v %v", i+1, ok, err)
		}
		if text == "" {
			empty++
			continue
		}
		want = append(want, Doc{text, file, i + 1, 0, 0, 0})
	}
	docs, stats, err := readAll(t, []string{file}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(want) || stats.Empty != empty {
		t.Fatalf("%d docs and %d empty, want %d and %d", len(docs), stats.Empty, len(want), empty)
	}
	for i := range want {
		if docs[i] != want[i] {
			t.Fatalf("doc %d: %q line %d, want %q line %d", i, docs[i].Text, docs[i].Line, want[i].Text, want[i].Line)
		}
	}
}
