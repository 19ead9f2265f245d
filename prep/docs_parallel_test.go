package prep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parallelCorpus writes files of every kind ReadRangeBatchesParallel may meet: plain,
// zstd and gzip JSONL with empty texts, bad records and invalid UTF-8, and a text file.
func parallelCorpus(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i, name := range []string{"a.jsonl", "b.jsonl.zst", "c.jsonl.gz", "d.jsonl", "e.txt", "f.jsonl.zst", "g.jsonl"} {
		if strings.HasSuffix(name, ".txt") {
			files = append(files, writeCorpusFile(t, dir, name, "a whole text file\n"))
			continue
		}
		var sb strings.Builder
		for j := range 40 + 30*i {
			switch {
			case j%17 == 5:
				sb.WriteString(`{"text":""}` + "\n")
			case j%23 == 7 && i != 0:
				sb.WriteString(`{"text": broken` + "\n")
			case j%29 == 11:
				sb.WriteString("{\"text\":\"bad \xff byte\"}\n")
			default:
				fmt.Fprintf(&sb, `{"text":"doc %d of %s: %s"}`+"\n", j, name, strings.Repeat("x", j*7%300))
			}
		}
		files = append(files, writeCorpusFile(t, dir, name, sb.String()))
	}
	return files
}

type readResult struct {
	docs    []Doc
	batches int
	stats   Stats
	err     error
	bytes   int64 // what Progress reported
	nDocs   int64
}

// readWith reads ranges with ReadRangeBatchesParallel (readers 1: ReadRangeBatches).
func readWith(ranges []FileRange, opt ReadOptions, readers int, fnErrAt int) readResult {
	var res readResult
	opt.Progress = func(b, d int64) { res.bytes += b; res.nDocs += d } // not atomic: -race sees concurrent calls
	res.stats, res.err = ReadRangeBatchesParallel(context.Background(), ranges, opt, 2000, readers, func(b []Doc) error {
		res.batches++
		for _, d := range b {
			if fnErrAt > 0 && len(res.docs) == fnErrAt {
				return errFnStop
			}
			res.docs = append(res.docs, d)
		}
		return nil
	})
	return res
}

var errFnStop = errors.New("fn stops here")

// sameRead fails t unless got hands on what want does, with the same stats and error.
func sameRead(t *testing.T, what string, got, want readResult) {
	t.Helper()
	if len(got.docs) != len(want.docs) {
		t.Fatalf("%s: %d documents, sequential read %d", what, len(got.docs), len(want.docs))
	}
	for i := range got.docs {
		if got.docs[i] != want.docs[i] {
			t.Fatalf("%s: document %d is %+v, sequential read %+v", what, i, got.docs[i], want.docs[i])
		}
	}
	if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
		t.Fatalf("%s: error %v, sequential read %v", what, got.err, want.err)
	}
	gs, ws := got.stats, want.stats
	gb, wb := gs.BadRecords, ws.BadRecords
	gs.BadRecords, ws.BadRecords = nil, nil
	if gs != ws {
		t.Fatalf("%s: stats %+v, sequential read %+v", what, gs, ws)
	}
	if (gb == nil) != (wb == nil) || gb != nil && (!reflect.DeepEqual(gb.Counts, wb.Counts) || !reflect.DeepEqual(gb.Examples, wb.Examples)) {
		t.Fatalf("%s: bad records %+v, sequential read %+v", what, gb, wb)
	}
	// (After an error, the readers ahead have read more than the sequential reader.)
	if want.err == nil && (got.bytes != want.bytes || got.nDocs != want.nDocs) {
		t.Fatalf("%s: progress %d bytes %d docs, sequential read %d, %d", what, got.bytes, got.nDocs, want.bytes, want.nDocs)
	}
}

// TestReadRangeBatchesParallel: with several readers, fn gets the documents the
// sequential reader hands on, in order, with the same stats, bad-record examples,
// progress totals and errors: with skipped documents, a bad record that stops the
// read (Fail), fn's own error, and a missing file (found before anything is read).
func TestReadRangeBatchesParallel(t *testing.T) {
	smallPieces(t)
	files := parallelCorpus(t)
	ranges := wholeFiles(files)
	base := ReadOptions{MaxBadExamples: 3}
	want := readWith(ranges, base, 1, 0)
	if want.err != nil || want.stats.Bad == 0 || want.stats.InvalidUTF8 == 0 || want.stats.Empty == 0 {
		t.Fatalf("the corpus should read with bad records, invalid UTF-8 and empty texts: %+v, %v", want.stats, want.err)
	}
	for _, readers := range []int{2, 3, 16} {
		got := readWith(ranges, base, readers, 0)
		sameRead(t, fmt.Sprintf("%d readers", readers), got, want)
		if got.batches <= want.batches {
			t.Errorf("%d readers: %d batches; a batch should not span two files (sequential: %d)", readers, got.batches, want.batches)
		}
	}
	// Parts of files, as partitioned runs read them: byte ranges of a plain file, and
	// stripes of compressed ones.
	parts := []FileRange{{File: files[0], Start: 0, End: 900}, {File: files[0], Start: 900, End: 2000},
		{File: files[0], Start: 2000, End: 1 << 40}, Striped(files[1], 1000, 3, 1), Striped(files[2], 700, 2, 0),
		Striped(files[5], 2000, 2, 1), {File: files[6], Start: 500, End: 5000}}
	wantParts := readWith(parts, base, 1, 0)
	if wantParts.err != nil || len(wantParts.docs) == 0 {
		t.Fatalf("parts: %d documents, error %v", len(wantParts.docs), wantParts.err)
	}
	sameRead(t, "parts", readWith(parts, base, 3, 0), wantParts)

	firstDocs := want.stats.Docs / int64(len(files)) // within the first files
	for _, skip := range []int64{1, firstDocs, firstDocs + 3, want.stats.Docs - 2, want.stats.Docs + 5} {
		opt := base
		opt.SkipDocs = skip
		sameRead(t, fmt.Sprintf("skip %d", skip), readWith(ranges, opt, 3, 0), readWith(ranges, opt, 1, 0))
	}
	fail := base
	fail.OnError = Fail
	w := readWith(ranges, fail, 1, 0)
	if w.err == nil {
		t.Fatal("Fail: the bad records should stop the read")
	}
	sameRead(t, "Fail", readWith(ranges, fail, 4, 0), w)
	// fn's error: the same documents before it, and the error as it is (the stats
	// count only the ranges finished before it).
	got, w := readWith(ranges, base, 4, 150), readWith(ranges, base, 1, 150)
	got.stats, w.stats = Stats{}, Stats{}
	sameRead(t, "fn's error", got, w)
	if got.err != errFnStop {
		t.Fatalf("fn's error should come back as it is, got %v", got.err)
	}

	missing := append(wholeFiles(files), FileRange{File: filepath.Join(t.TempDir(), "gone.jsonl"), End: -1})
	got = readWith(missing, base, 4, 0)
	if len(got.docs) != 0 || !errors.Is(got.err, os.ErrNotExist) {
		t.Fatalf("a missing last file: %d documents handed on, error %v; want none, and the file named", len(got.docs), got.err)
	}
}

// TestReadRangeBatchesParallelCancel: a canceled context stops every reader; the call
// returns only once they have.
func TestReadRangeBatchesParallelCancel(t *testing.T) {
	ranges := wholeFiles(parallelCorpus(t))
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := ReadRangeBatchesParallel(ctx, ranges, ReadOptions{}, 500, 4, func(b []Doc) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: error %v", err)
	}
}

// TestReadRangeBatchesParallelPieces: an uncompressed .jsonl file read by several
// readers in pieces hands on what one reader does, with the file's line numbers in the
// documents, the bad-record examples and the error, and the hint of a piece's first
// line that is not the file's first: lines of 100 bytes, pieces of 4×2000 bytes, so
// line 81 starts the second piece.
func TestReadRangeBatchesParallelPieces(t *testing.T) {
	smallPieces(t)
	var sb strings.Builder
	for k := 1; k <= 300; k++ {
		var line string
		switch k {
		case 81, 170:
			line = `{"text": broken`
		case 150:
			line = `{"title":"no text"}`
		case 200:
			line = "{\"text\":\"bad \xff byte\"}"
		case 230:
			line = `{"text":42}`
		case 260:
			line = `{"text":""}`
		default:
			line = fmt.Sprintf(`{"text":"line %d"}`, k)
		}
		sb.WriteString(line + strings.Repeat(" ", 99-len(line)) + "\n")
	}
	file := writeCorpusFile(t, t.TempDir(), "p.jsonl", sb.String())
	pieces, err := cutRanges([]FileRange{Whole(file)}, 4*2000)
	if err != nil || len(pieces) != 4 || pieces[1].Start != 8000 || !pieces[1].relative || pieces[0].relative {
		t.Fatalf("cut into %+v, %v; want 4 pieces, the second from byte 8000", pieces, err)
	}
	base := ReadOptions{MaxBadExamples: 5}
	for _, rg := range []FileRange{Whole(file), {File: file, Start: 0, End: 26050}, {File: file, Start: 4550, End: 29000}} {
		want := readWith([]FileRange{rg}, base, 1, 0)
		if want.err != nil || want.stats.Bad != 4 && rg.Start == 0 && rg.IsWhole() {
			t.Fatalf("%v: %+v, %v", rg, want.stats, want.err)
		}
		for _, readers := range []int{2, 5} {
			sameRead(t, fmt.Sprintf("%v, %d readers", rg, readers), readWith([]FileRange{rg}, base, readers, 0), want)
			skip := base
			skip.SkipDocs = 120
			sameRead(t, fmt.Sprintf("%v, %d readers, skip", rg, readers), readWith([]FileRange{rg}, skip, readers, 0), readWith([]FileRange{rg}, skip, 1, 0))
		}
	}
	if got := readWith([]FileRange{Whole(file)}, base, 3, 0); got.docs[len(got.docs)-1].Line != 300 {
		t.Fatalf("the last document is on line %d, want 300", got.docs[len(got.docs)-1].Line)
	}
	fail := base
	fail.OnError = Fail
	want := readWith([]FileRange{Whole(file)}, fail, 1, 0)
	if want.err == nil || !strings.Contains(want.err.Error(), "line 81:") || !strings.Contains(want.err.Error(), "fix or delete the line") {
		t.Fatalf("Fail: %v; want line 81, fix or delete the line", want.err)
	}
	// (Bytes after the error: how far each reader's buffer had read.)
	got := readWith([]FileRange{Whole(file)}, fail, 3, 0)
	got.stats.Bytes, want.stats.Bytes = 0, 0
	sameRead(t, "Fail", got, want)

	// fn's own error while documents are skipped: as it is, its line not shifted.
	skip := base
	skip.SkipDocs = 100
	for _, readers := range []int{1, 3} {
		_, err := ReadRangeBatchesParallel(context.Background(), []FileRange{Whole(file)}, skip, 2000, readers, func(b []Doc) error {
			for _, d := range b {
				if d.Line == 150+1 {
					return &FileError{File: d.Source, Line: d.Line, Err: errFnStop}
				}
			}
			return nil
		})
		var fe *FileError
		if !errors.As(err, &fe) || fe.Line != 151 || !errors.Is(err, errFnStop) {
			t.Fatalf("%d readers: fn's error came back as %v; want it as it was, line 151", readers, err)
		}
	}
}

// smallPieces lets ReadRangeBatchesParallel cut pieces of a few KB for the test.
func smallPieces(t *testing.T) {
	old := minPieceBytes
	minPieceBytes = 1
	t.Cleanup(func() { minPieceBytes = old })
}

// TestReadRangeBatchesParallelFileChanged: a file cut short after it was cut into
// pieces is an error (a piece opened after sees another size; one mapped before faults
// past the new end), not a read of fewer lines.
func TestReadRangeBatchesParallelFileChanged(t *testing.T) {
	line := `{"text":"` + strings.Repeat("y", 80) + `"}`
	line += strings.Repeat(" ", 99-len(line)) + "\n"
	file := writeCorpusFile(t, t.TempDir(), "big.jsonl", strings.Repeat(line, 30000)) // 3 MB: mapped
	old := minPieceBytes
	minPieceBytes = 256 << 10
	t.Cleanup(func() { minPieceBytes = old })
	truncated := false
	st, err := ReadRangeBatchesParallel(context.Background(), []FileRange{Whole(file)}, ReadOptions{}, 64<<10, 2, func(b []Doc) error {
		if !truncated {
			truncated = true
			if err := os.Truncate(file, 1500000); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if !errors.Is(err, errChangedWhileRead) && !errors.Is(err, errCutWhileMapped) {
		t.Fatalf("a file cut short while read in pieces: error %v, %d documents; want it said", err, st.Docs)
	}
}
