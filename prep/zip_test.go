package prep

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// zipMember is a member of a test zip archive; a name ending in "/" is a directory.
type zipMember struct{ name, data string }

// writeZip writes members into the zip archive dir/name (deflated, but for members
// whose name starts with "stored") and returns its path.
func writeZip(t testing.TB, dir, name string, members []zipMember) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		method := zip.Deflate
		if strings.HasPrefix(m.name, "stored") || strings.HasSuffix(m.name, "/") {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadZip(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("<page>enwik8-like XML, one document</page>\n", 100_000) // 4.4 MB
	path := writeZip(t, dir, "corpus.zip", []zipMember{
		{"b.txt", "second in name order, first in the archive"},
		{"sub/", ""},
		{"a.jsonl", `{"text":"a member is text, whatever its name"}`},
		{"stored", "stored, not deflated"},
		{"empty", ""},
		{"enwik8", big},
		{"latin1", "caf\xe9"},
	})
	var progress int64
	docs, stats, err := readAll(t, []string{path}, ReadOptions{Progress: func(b, _ int64) { progress += b }})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{
		{"second in name order, first in the archive", path + ":b.txt", 0, 0, 0, 0},
		{`{"text":"a member is text, whatever its name"}`, path + ":a.jsonl", 0, 0, 0, 0},
		{"stored, not deflated", path + ":stored", 0, 0, 0, 0},
		{big, path + ":enwik8", 0, 0, 0, 0},
		{"caf\uFFFD", path + ":latin1", 0, 0, 0, 0},
	}
	if !slices.Equal(docs, want) {
		t.Errorf("got %d docs, want %d", len(docs), len(want))
	}
	size, _ := TotalBytes([]string{path})
	if stats.Docs != 5 || stats.Empty != 1 || stats.InvalidUTF8 != 1 || stats.Bytes != size || progress != size {
		t.Errorf("stats %+v, progress %d; want 5 docs, 1 empty, 1 with invalid UTF-8, %d bytes", stats, progress, size)
	}
	if ex := stats.BadRecords.Examples; len(ex) != 1 || ex[0].File != path+":latin1" || !ex[0].Kept || ex[0].Reason != ReasonInvalidUTF8 {
		t.Errorf("examples %+v", ex)
	}
}

func TestReadZipCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := writeZip(t, dir, "c.zip", []zipMember{
		{"one", strings.Repeat("first member ", 1000)},
		{"two", strings.Repeat("second member ", 1000)},
		{"three", "third"},
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Garble the second member's data: a deflate error or a checksum mismatch.
	i := bytes.Index(data, []byte("two")) + 3 + 20
	for j := i; j < i+16; j++ {
		data[j] ^= 0x5a
	}
	bad := filepath.Join(dir, "bad.zip")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	docs, stats, err := readAll(t, []string{bad}, ReadOptions{AcceptTruncated: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Source != bad+":one" || docs[1].Source != bad+":three" || stats.Truncated != 1 ||
		stats.BadRecords.Counts[ReasonCorrupt] != 1 || stats.BadRecords.Examples[0].File != bad+":two" {
		t.Errorf("Skip: %d docs, stats %+v, report %+v", len(docs), stats, stats.BadRecords)
	}
	docs, _, err = readAll(t, []string{bad}, ReadOptions{OnError: Fail})
	if err == nil || !strings.Contains(err.Error(), "bad.zip:two: ") || !strings.Contains(err.Error(), hintCorrupt) || len(docs) != 1 {
		t.Errorf("Fail: %d docs, err %v", len(docs), err)
	}

	// Cut short, an archive has no directory: nothing can be read, whatever the policy.
	cut := filepath.Join(dir, "cut.zip")
	if err := os.WriteFile(cut, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(t, []string{cut}, ReadOptions{})
	if _, isFile := errors.AsType[*FileError](err); !isFile || !strings.Contains(err.Error(), "cut.zip: not a readable zip archive") {
		t.Errorf("cut archive: %v", err)
	}
}
