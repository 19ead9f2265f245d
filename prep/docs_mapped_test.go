package prep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readMappedOrNot reads file with ReadDocs, mapped or not, returning the documents, the stats
// and the error's text.
func readMappedOrNot(t *testing.T, file string, opt ReadOptions, mapped bool) ([]Doc, Stats, string) {
	t.Helper()
	old := minMappedSize
	defer func() { minMappedSize = old }()
	minMappedSize = 0
	if !mapped {
		minMappedSize = 1 << 62
	}
	var docs []Doc
	st, err := ReadDocs(context.Background(), []string{file}, opt, func(d Doc) error {
		docs = append(docs, d)
		return nil
	})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return docs, st, msg
}

// checkMappedMatchesStream fails t unless file reads the same mapped and not, with
// either error policy.
func checkMappedMatchesStream(t *testing.T, file string) {
	t.Helper()
	for _, policy := range []ErrorPolicy{Skip, Fail} {
		opt := ReadOptions{OnError: policy}
		mDocs, mStats, mErr := readMappedOrNot(t, file, opt, true)
		sDocs, sStats, sErr := readMappedOrNot(t, file, opt, false)
		if mErr != "" {
			// Bytes counts what was read when the error stopped the reading: the
			// stream reads ahead a buffer's worth, the map reads to the line.
			mStats.Bytes, sStats.Bytes = 0, 0
		}
		if !reflect.DeepEqual(mDocs, sDocs) || mErr != sErr || !reflect.DeepEqual(mStats, sStats) {
			t.Fatalf("%s, policy %v: mapped %d docs, %+v, %q; read %d docs, %+v, %q", file, policy, len(mDocs), mStats, mErr, len(sDocs), sStats, sErr)
		}
	}
}

// TestReadMappedMatchesStream: a plain .jsonl file read through a memory map hands on
// the same documents, counts and errors as read through a buffer, whatever its lines
// (blank, bad, long, the last without a newline) and the policy. (Stats.Bytes of a
// reading stopped by an error aside.)
func TestReadMappedMatchesStream(t *testing.T) {
	long := strings.Repeat("x", 600<<10) // longer than the stream's buffer
	cases := map[string]string{
		"plain":        "{\"text\":\"a\"}\n{\"text\":\"b\\n\"}\n",
		"unterminated": "{\"text\":\"a\"}\n{\"text\":\"last\"}",
		"blank":        "\n  \n{\"text\":\"a\"}\n\n{\"text\":\"\"}\n",
		"long":         "{\"text\":\"" + long + "\"}\n{\"text\":\"after\"}\n",
		"bad":          "{\"text\":\"a\"}\n{\"text\":1}\nnot json\n{\"other\":\"c\"}\n{\"text\":\"d\"}\n",
		"cut":          "{\"text\":\"a\"}\n{\"text\":\"b",
		"invalid-utf8": "{\"text\":\"a\xff\"}\n",
		"empty":        "",
	}
	dir := t.TempDir()
	for name, content := range cases {
		file := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		checkMappedMatchesStream(t, file)
	}
}

// TestReadMappedCompressedData: a .jsonl file that holds gzip data is refused as the
// stream reader refuses it.
func TestReadMappedCompressedData(t *testing.T) {
	file := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(file, compress(t, "x.gz", []byte("{\"text\":\"a\"}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, mErr := readMappedOrNot(t, file, ReadOptions{}, true)
	_, _, sErr := readMappedOrNot(t, file, ReadOptions{}, false)
	if mErr == "" || mErr != sErr {
		t.Fatalf("mapped: %q, read: %q", mErr, sErr)
	}
}

// TestReadMappedFileCutShort: a file cut short while it is read through the map is
// an error naming the file and an offset past its new end, not a crash (the page
// past the new end faults).
func TestReadMappedFileCutShort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "docs.jsonl")
	line := "{\"text\":\"" + strings.Repeat("y", 4000) + "\"}\n"
	if err := os.WriteFile(file, []byte(strings.Repeat(line, 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	old := minMappedSize
	defer func() { minMappedSize = old }()
	minMappedSize = 0
	cut := int64(3 * os.Getpagesize())
	n := 0
	_, err := ReadDocs(context.Background(), []string{file}, ReadOptions{}, func(d Doc) error {
		if n++; n == 1 {
			return os.Truncate(file, cut)
		}
		return nil
	})
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != file || !errors.Is(err, errCutWhileMapped) {
		t.Fatalf("got %v after %d documents, want the file cut short", err, n)
	}
	if page := int64(os.Getpagesize()); fe.Offset < cut || fe.Offset >= (cut+page)/page*page+page {
		t.Errorf("fault at offset %d, want it in the first page past the cut at %d", fe.Offset, cut)
	}
}

// FuzzReadMapped: any plain file reads the same through the map as through a buffer,
// whole or in two byte ranges cut anywhere.
func FuzzReadMapped(f *testing.F) {
	f.Add([]byte("{\"text\": \"a\"}\n{\"text\": \"b\"}\n"), uint16(5))
	f.Add([]byte("\n\n{\"text\": \"a\"}\r\nbad\n{\"text\": [\"x\", \"y\"]}"), uint16(17))
	f.Add([]byte("{\"text\": \"\"}\n{\"text\": \"\\u00e9\xff\"}"), uint16(0))
	file := filepath.Join(f.TempDir(), "f.jsonl")
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if err := os.WriteFile(file, data, 0o666); err != nil {
			t.Fatal(err)
		}
		checkMappedMatchesStream(t, file)
		if sniff(data[:min(len(data), 4)]) != plain {
			return
		}
		c := int64(cut) % (int64(len(data)) + 1)
		ranges := []FileRange{{File: file, End: c}, {File: file, Start: c, End: int64(len(data))}}
		defer func(old int64) { minMappedSize = old }(minMappedSize)
		minMappedSize = 0
		mDocs, mStats := readRangeDocs(t, ranges, ReadOptions{})
		minMappedSize = 1 << 62
		sDocs, sStats := readRangeDocs(t, ranges, ReadOptions{})
		if !reflect.DeepEqual(mDocs, sDocs) || !reflect.DeepEqual(mStats, sStats) {
			t.Fatalf("ranges cut at %d: mapped %d docs, %+v; read %d docs, %+v", c, len(mDocs), mStats, len(sDocs), sStats)
		}
	})
}
