package prep

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkSkipDocs checks that reading files with opt and SkipDocs n hands on full[n:]
// (full and fullStats: a read without SkipDocs), for several n, and counts every
// record as the full read did.
func checkSkipDocs(t *testing.T, files []string, opt ReadOptions, full []Doc, fullStats Stats) {
	t.Helper()
	n := int64(len(full))
	for _, skip := range []int64{0, 1, n / 2, n - 1, n, n + 5} {
		opt.SkipDocs = max(skip, 0)
		docs, stats, err := readAll(t, files, opt)
		if err != nil {
			t.Fatalf("SkipDocs %d: %v", skip, err)
		}
		done := min(opt.SkipDocs, n)
		if !slices.Equal(docs, full[done:]) {
			t.Errorf("SkipDocs %d: %d docs, not the last %d of the full read", skip, len(docs), n-done)
		}
		if stats.Skipped != done || stats.Docs != n-done || stats.Records() != fullStats.Records() ||
			stats.Empty != fullStats.Empty || stats.Bad != fullStats.Bad || stats.Filtered != fullStats.Filtered ||
			stats.NoMeta != fullStats.NoMeta || stats.Files != fullStats.Files || stats.InvalidUTF8 != fullStats.InvalidUTF8 {
			t.Errorf("SkipDocs %d: stats %+v; the full read's %+v", skip, stats, fullStats)
		}
		// The invalid UTF-8 of the skipped documents is counted, with its examples, as
		// the full read counts it (a resumed run's report and manifest are an
		// uninterrupted run's).
		if (stats.BadRecords == nil) != (fullStats.BadRecords == nil) ||
			stats.BadRecords != nil && (!maps.Equal(stats.BadRecords.Counts, fullStats.BadRecords.Counts) || !slices.Equal(stats.BadRecords.Examples, fullStats.BadRecords.Examples)) {
			t.Errorf("SkipDocs %d: bad records %+v; the full read's %+v", skip, stats.BadRecords, fullStats.BadRecords)
		}
	}
}

func TestReadDocsSkipDocs(t *testing.T) {
	dir := t.TempDir()
	var jsonl strings.Builder
	for i := range 50 {
		switch i % 7 {
		case 3:
			jsonl.WriteString(`{"text":""}` + "\n") // empty: never counts towards SkipDocs
		case 5:
			fmt.Fprintf(&jsonl, `{"text":["list %d","b"]}`+"\n", i)
		case 6:
			jsonl.WriteString(`{"text":[""]}` + "\n") // an empty list text
		default:
			fmt.Fprintf(&jsonl, `{"text":"doc\t%d \u00e9"}`+"\n", i)
		}
	}
	// Invalid UTF-8 in a JSON string, a list of strings, a whole text file (cut between
	// two reads of its stream) and a zip member: counted also where skipped.
	jsonl.WriteString(`{"text":1}` + "\n" + `not json` + "\n" + "{\"text\":\"bad \xff utf8\"}\n" + "{\"text\":[\"bad \xfe\",\"list\"]}\n")
	files := []string{
		writeCorpusFile(t, dir, "a.jsonl.zst", jsonl.String()),
		writeCorpusFile(t, dir, "b.txt", "a text file, \xe2\x82 cut"),
		writeCorpusFile(t, dir, "c.txt.gz", ""),
		writeZip(t, dir, "d.zip", []zipMember{{"one", "first"}, {"dir/", ""}, {"two", "sec\xc3ond"}, {"empty", ""}}),
	}
	full, stats, err := readAll(t, files, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 41 || stats.Bad != 2 || stats.InvalidUTF8 != 4 || stats.Empty != 16 {
		t.Fatalf("%d docs, stats %+v", len(full), stats)
	}
	checkSkipDocs(t, files, ReadOptions{}, full, stats)
	// Without examples, a skipped whole file is checked as a stream (utf8Checker).
	noExamples := ReadOptions{MaxBadExamples: -1}
	fullNo, statsNo, err := readAll(t, files, noExamples)
	if err != nil || statsNo.InvalidUTF8 != 4 {
		t.Fatalf("without examples: %v, stats %+v", err, statsNo)
	}
	checkSkipDocs(t, files, noExamples, fullNo, statsNo)

	// ReadBatches batches what is handed on, the same way every time.
	batches := func(skip int64) [][]Doc {
		var out [][]Doc
		_, err := ReadBatches(t.Context(), files, ReadOptions{SkipDocs: skip}, 40, func(b []Doc) error {
			out = append(out, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := batches(10)
	for range 3 {
		if again := batches(10); !slices.EqualFunc(first, again, slices.Equal) {
			t.Fatal("ReadBatches batched differently on a second run")
		}
	}
	if got := slices.Concat(first...); !slices.Equal(got, full[10:]) {
		t.Errorf("ReadBatches with SkipDocs 10 handed on %d docs, want %d", len(got), len(full)-10)
	}
}

// TestUTF8Checker: the streaming check agrees with utf8.Valid however the text is cut
// into writes (characters cut between them included).
func TestUTF8Checker(t *testing.T) {
	for _, s := range []string{"", "plain", "é", "日本語 text", "𝄞 clef", "a\xffb", "ok \uFFFD then \xff", "\xff then \uFFFD", "ab\xef\xbf\xbdc\xe2", "\xe2\x82", "ab\xe2\x82", "\xe2\x82\xac",
		"x\xc3", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too high", "\x80 lone", "ok \xef\xbf\xbd replacement", "\xf0\x9d\x84"} {
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				var c utf8Checker
				for _, part := range []string{s[:i], s[i:j], s[j:]} {
					c.Write([]byte(part))
				}
				if got, want := c.valid(), utf8.ValidString(s); got != want {
					t.Fatalf("%q written as %q %q %q: valid %v, want %v", s, s[:i], s[i:j], s[j:], got, want)
				}
				if got, want := c.firstFFFD(), firstReplacement(validUTF8([]byte(s))); !c.valid() && got != want {
					t.Fatalf("%q written as %q %q %q: first U+FFFD at %d, want %d", s, s[:i], s[i:j], s[j:], got, want)
				}
			}
		}
	}
}

// FuzzUTF8Checker: the streaming check agrees with utf8.Valid on any bytes cut into
// writes at any two points.
func FuzzUTF8Checker(f *testing.F) {
	f.Add([]byte("日本語 \xe2\x82"), 3, 7)
	f.Add([]byte("a\xf0\x9d\x84\x9eb\xff"), 2, 4)
	f.Fuzz(func(t *testing.T, data []byte, i, j int) {
		i, j = min(max(i, 0), len(data)), min(max(j, 0), len(data))
		i, j = min(i, j), max(i, j)
		var c utf8Checker
		for _, part := range [][]byte{data[:i], data[i:j], data[j:]} {
			if n, err := c.Write(part); n != len(part) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if got, want := c.valid(), utf8.Valid(data); got != want {
			t.Fatalf("%q cut at %d and %d: valid %v, want %v", data, i, j, got, want)
		}
		if got, want := c.firstFFFD(), firstReplacement(validUTF8(data)); !c.valid() && got != want {
			t.Fatalf("%q cut at %d and %d: first U+FFFD at %d, want %d", data, i, j, got, want)
		}
	})
}

// TestSkipProgress: the bytes read to skip SkipDocs documents (a resumed run's, already
// done) went to Progress with the rest, and a progress bar counted them in its MB/s and
// ETA; SkipProgress now has them, up to the last document skipped, and Progress the
// rest, the two adding up to the file's size.
func TestSkipProgress(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const n = 40000
	for i := range n {
		fmt.Fprintf(&b, `{"text":"document %d %s"}`+"\n", i, strings.Repeat("x", 200))
	}
	path := writeCorpusFile(t, dir, "a.jsonl", b.String())
	size := int64(b.Len())
	var skipped, read, docs int64
	opt := ReadOptions{SkipDocs: n / 2, SkipProgress: func(bytes int64) { skipped += bytes },
		Progress: func(bytes, d int64) { read += bytes; docs += d }}
	if _, _, err := readAll(t, []string{path}, opt); err != nil {
		t.Fatal(err)
	}
	if skipped+read != size || docs != n/2 || skipped < size/4 || read < size/4 {
		t.Errorf("skipped %d bytes and read %d (%d docs) of %d; want about half each, %d docs", skipped, read, docs, size, n/2)
	}
	// Without SkipProgress, Progress counts them all, as before.
	read, docs = 0, 0
	opt.SkipProgress = nil
	if _, _, err := readAll(t, []string{path}, opt); err != nil {
		t.Fatal(err)
	}
	if read != size || docs != n/2 {
		t.Errorf("without SkipProgress: read %d bytes, %d docs; want %d, %d", read, docs, size, n/2)
	}
}
