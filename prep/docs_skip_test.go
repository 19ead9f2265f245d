package prep

import (
	"fmt"
	"slices"
	"strings"
	"testing"
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
			stats.NoMeta != fullStats.NoMeta || stats.Files != fullStats.Files {
			t.Errorf("SkipDocs %d: stats %+v; the full read's %+v", skip, stats, fullStats)
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
	jsonl.WriteString(`{"text":1}` + "\n" + `not json` + "\n" + "{\"text\":\"bad \xff utf8\"}\n")
	files := []string{
		writeCorpusFile(t, dir, "a.jsonl.zst", jsonl.String()),
		writeCorpusFile(t, dir, "b.txt", "a text file"),
		writeCorpusFile(t, dir, "c.txt.gz", ""),
		writeZip(t, dir, "d.zip", []zipMember{{"one", "first"}, {"dir/", ""}, {"two", "second"}, {"empty", ""}}),
	}
	full, stats, err := readAll(t, files, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 40 || stats.Bad != 2 || stats.InvalidUTF8 != 1 || stats.Empty != 16 {
		t.Fatalf("%d docs, stats %+v", len(full), stats)
	}
	checkSkipDocs(t, files, ReadOptions{}, full, stats)

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
