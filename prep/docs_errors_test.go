package prep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDocsErrors checks the errors of ReadDocs, with OnError Fail for bad
// records (badrecords_test.go has them skipped).
func TestReadDocsErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeCorpusFile(t, dir, "good.jsonl", `{"text":"a"}`+"\n")
	zstdData := compress(t, "x.zst", bytes.Repeat([]byte(`{"text":"some text to compress"}`+"\n"), 1000))
	gzipData := compress(t, "x.gz", bytes.Repeat([]byte(`{"text":"some text to compress"}`+"\n"), 1000))
	raw := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name  string
		file  string
		docs  int      // documents read before the error (good.jsonl's included), -1: any
		is    error    // nil: any
		wants []string // substrings of the message
	}{
		{"unknown format", raw("a.csv", []byte("text\n")), 0, ErrUnknownFormat,
			[]string{"a.csv: unknown format (name it with one of .jsonl, .jsonl.zst"}},
		{"missing file", filepath.Join(dir, "nope.jsonl"), 0, os.ErrNotExist, []string{"nope.jsonl", "no such file"}},
		{"directory", mkdir(t, dir, "dir.txt"), 0, nil, []string{"dir.txt: is a directory"}},
		{"directory without a suffix", mkdir(t, dir, "corpusdir"), 0, nil, []string{"corpusdir: is a directory", "corpusdir/*.jsonl"}},
		{"plain text named jsonl", writeCorpusFile(t, dir, "p.jsonl", "Hello, world\n"), 1, ErrInvalidJSON,
			[]string{"p.jsonl line 1: invalid JSON at byte 1: invalid character 'H'", "(is this file JSONL? plain text files must end in .txt)"}},
		{"byte order mark", writeCorpusFile(t, dir, "bom.jsonl", "\xEF\xBB\xBF"+`{"text":"a"}`+"\n"), 1, ErrInvalidJSON,
			[]string{"bom.jsonl line 1: invalid JSON", "byte order mark (EF BB BF)", `sed -i '1s/^\xEF\xBB\xBF//' FILE`}},
		{"bad line", writeCorpusFile(t, dir, "b.jsonl", `{"text":"a"}`+"\n"+`{"text":"b",}`+"\n"+`{"text":"c"}`), 2, ErrInvalidJSON,
			[]string{"b.jsonl line 2: invalid JSON at byte 13", "(fix or delete the line)"}},
		{"truncated last line", writeCorpusFile(t, dir, "t.jsonl", `{"text":"a"}`+"\n"+`{"text":"b`), 2, ErrInvalidJSON,
			[]string{"t.jsonl line 2: invalid JSON", "unexpected end of JSON input", "file looks truncated"}},
		{"not an object", writeCorpusFile(t, dir, "o.jsonl", `{"text":"a"}`+"\n"+`["b"]`+"\n"), 2, ErrNotObject,
			[]string{"o.jsonl line 2: not a JSON object (it is an array)"}},
		{"missing key", writeCorpusFile(t, dir, "m.jsonl", `{"content":"a","meta":{}}`+"\n"), 1, ErrMissing,
			[]string{`m.jsonl line 1: field "text" missing (the line has "content", "meta")`, "--text-key"}},
		{"bad line in a gzip file", writeCorpusFile(t, dir, "bg.jsonl.gz", `{"text":"a"}`+"\n"+`{"text":"b",}`+"\n"+`{"text":"c"}`), 2, ErrInvalidJSON,
			[]string{"bg.jsonl.gz line 2: invalid JSON", "gzip -t"}},
		{"not text", writeCorpusFile(t, dir, "n.jsonl.gz", `{"text":{"p":1}}`+"\n"), 1, ErrNotText,
			[]string{`n.jsonl.gz line 1: field "text" is an object ({"p":1})`}},
		{"zstd named jsonl", raw("z.jsonl", zstdData), 1, nil,
			[]string{"z.jsonl: the data is zstd-compressed (rename the file to end in .jsonl.zst)"}},
		{"gzip named txt", raw("g.txt", gzipData), 1, nil, []string{"g.txt: the data is gzip-compressed (rename the file to end in .txt.gz)"}},
		{"plain named zst", raw("q.jsonl.zst", []byte(`{"text":"a"}`)), 1, nil,
			[]string{"q.jsonl.zst: not zstd data (it starts with 7b 22 74 65)", "drop .zst from its name"}},
		{"empty zst", raw("e.jsonl.zst", nil), 1, nil, []string{"e.jsonl.zst: the file is empty, not zstd data"}},
		{"truncated zstd", raw("tz.jsonl.zst", zstdData[:len(zstdData)-10]), -1, nil,
			[]string{"tz.jsonl.zst line ", "(the file may be truncated or corrupt: download it again"}},
		{"truncated gzip", raw("tg.jsonl.gz", gzipData[:len(gzipData)/2]), -1, nil,
			[]string{"tg.jsonl.gz line ", "unexpected EOF (after ", "(the file may be truncated or corrupt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, _, err := readAll(t, []string{good, tt.file}, ReadOptions{OnError: Fail})
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %q", err, tt.is)
			}
			for _, want := range tt.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if tt.docs >= 0 && len(docs) != tt.docs {
				t.Errorf("%d documents before the error, want %d", len(docs), tt.docs)
			}
		})
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadDocsStops(t *testing.T) {
	dir := t.TempDir()
	file := writeCorpusFile(t, dir, "a.jsonl", strings.Repeat(`{"text":"a"}`+"\n", 5000))

	// fn's error comes back as it is.
	stop := errors.New("stop")
	n := 0
	_, err := ReadDocs(context.Background(), []string{file}, ReadOptions{}, func(Doc) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("err %v after %d docs, want stop after 3", err, n)
	}

	// A canceled context stops the reading.
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	_, err = ReadDocs(ctx, []string{file}, ReadOptions{}, func(Doc) error {
		if n++; n == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n >= 5000 {
		t.Errorf("err %v after %d docs, want canceled early", err, n)
	}
}
