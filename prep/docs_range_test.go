package prep

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rangeCorpus is JSONL with what a cut can land on: blank lines, CRLF, bad records,
// empty texts, a line longer than the reader's buffer, and no final newline.
func rangeCorpus(r *rand.Rand, lines int) string {
	var b strings.Builder
	long := false // one line longer than the reader's 1 MiB buffer at most
	for i := range lines {
		k := r.IntN(12)
		if k == 4 && long {
			k = 5
		}
		switch k {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString("not json\n")
		case 2:
			b.WriteString(`{"text": ""}` + "\n")
		case 3:
			fmt.Fprintf(&b, "{\"text\": %q}\r\n", fmt.Sprint("crlf ", i))
		case 4:
			long = true
			fmt.Fprintf(&b, "{\"text\": %q}\n", strings.Repeat("long ", 1+r.IntN(300000)))
		default:
			fmt.Fprintf(&b, "{\"text\": %q, \"meta\": {\"i\": %d}}\n", fmt.Sprint("doc ", i, strings.Repeat("x", r.IntN(40))), i)
		}
	}
	s := b.String()
	if r.IntN(2) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// tiling cuts [0, size) at n random points, some on line starts and newlines.
func tiling(r *rand.Rand, file, data string, n int) []FileRange {
	cuts := []int64{0, int64(len(data))}
	for range n {
		c := r.Int64N(int64(len(data)) + 1)
		if r.IntN(3) == 0 { // on a newline or just after it
			if i := strings.IndexByte(data[c:], '\n'); i >= 0 {
				c += int64(i + r.IntN(2))
			}
		}
		cuts = append(cuts, c)
	}
	slices.Sort(cuts)
	var rs []FileRange
	for i := 1; i < len(cuts); i++ {
		rs = append(rs, FileRange{File: file, Start: cuts[i-1], End: cuts[i]})
	}
	if r.IntN(2) == 0 { // an End past the size reads to the end
		rs[len(rs)-1].End += 100
	}
	return rs
}

func readRangeDocs(t testing.TB, rs []FileRange, opt ReadOptions) ([]Doc, Stats) {
	t.Helper()
	var docs []Doc
	st, err := ReadRanges(context.Background(), rs, opt, func(d Doc) error {
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs, st
}

// TestReadRangesTile checks the rule that makes partitioned runs equal a single one:
// ranges tiling a file, read one by one, hand on the whole file's documents in order,
// and count its records and bytes once.
func TestReadRangesTile(t *testing.T) {
	dir := t.TempDir()
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := rangeCorpus(r, 20+r.IntN(60))
		file := filepath.Join(dir, fmt.Sprintf("c%d.jsonl", seed))
		if err := os.WriteFile(file, []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
		opt := ReadOptions{OnError: Skip, MaxBadExamples: 1000}
		want, wantSt := readRangeDocs(t, []FileRange{Whole(file)}, opt)
		for try := range 5 {
			rs := tiling(r, file, data, 1+r.IntN(12))
			var got []Doc
			var sum Stats
			for _, rg := range rs {
				docs, st := readRangeDocs(t, []FileRange{rg}, opt)
				got = append(got, docs...)
				sum.Docs += st.Docs
				sum.Bad += st.Bad
				sum.Empty += st.Empty
				sum.Bytes += st.Bytes
				sum.TextBytes += st.TextBytes
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d try %d: %d documents from ranges %v, want %d", seed, try, len(got), rs, len(want))
			}
			for i := range got {
				if got[i].Text != want[i].Text {
					t.Fatalf("seed %d try %d: document %d differs (ranges %v)", seed, try, i, rs)
				}
				if got[i].Line != 0 && got[i].Line != want[i].Line {
					t.Fatalf("seed %d: document %d is line %d, want %d", seed, i, got[i].Line, want[i].Line)
				}
				if got[i].Line == 0 && got[i].Offset <= 0 {
					t.Fatalf("seed %d: document %d has neither a line nor an offset", seed, i)
				}
			}
			if sum.Docs != wantSt.Docs || sum.Bad != wantSt.Bad || sum.Empty != wantSt.Empty || sum.TextBytes != wantSt.TextBytes {
				t.Fatalf("seed %d try %d: ranges counted %+v, the whole file %+v", seed, try, sum, wantSt)
			}
			if sum.Bytes != int64(len(data)) {
				t.Fatalf("seed %d try %d: ranges counted %d bytes, the file has %d", seed, try, sum.Bytes, len(data))
			}
		}
	}
}

// TestReadRangesOffsets: a line of a range that starts mid-file is named by its byte
// offset, which points at the line.
func TestReadRangesOffsets(t *testing.T) {
	dir := t.TempDir()
	data := "{\"text\": \"a\"}\n{\"text\": \"b\"}\nnot json\n{\"text\": \"c\"}\n"
	file := filepath.Join(dir, "o.jsonl")
	os.WriteFile(file, []byte(data), 0o666)
	docs, _ := readRangeDocs(t, []FileRange{{File: file, Start: 1, End: int64(len(data))}}, ReadOptions{OnError: Skip})
	if len(docs) != 2 || docs[0].Text != "b" || docs[0].Line != 0 || docs[0].Offset != 14 || data[docs[1].Offset] != '{' {
		t.Fatalf("got %+v", docs)
	}
	_, err := ReadRanges(context.Background(), []FileRange{{File: file, Start: 5, End: 40}}, ReadOptions{OnError: Fail}, func(Doc) error { return nil })
	var fe *FileError
	if !errors.As(err, &fe) || fe.Offset != 28 || !strings.Contains(err.Error(), "o.jsonl line at byte 28:") {
		t.Fatalf("got %v", err)
	}
}

// TestReadRangesRefuses ranges of files that cannot be cut.
func TestReadRangesRefuses(t *testing.T) {
	dir := t.TempDir()
	zst := writeCorpusFile(t, dir, "a.jsonl.zst", "{\"text\": \"z\"}\n")
	txt := writeCorpusFile(t, dir, "b.txt", "text")
	plain := writeCorpusFile(t, dir, "c.jsonl", "{\"text\": \"p\"}\n")
	for _, rg := range []FileRange{{File: zst, End: 3}, {File: txt, Start: 1, End: 2}, {File: plain, Start: 3, End: 1}, {File: plain, Start: 2, End: -1}} {
		_, err := ReadRanges(context.Background(), []FileRange{rg}, ReadOptions{}, func(Doc) error { return nil })
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Errorf("%v: got %v, want a FileError", rg, err)
		}
	}
	if Splittable(zst) || Splittable(txt) || !Splittable(plain) || !Splittable("X.JSONL") {
		t.Error("Splittable is wrong")
	}
}

// FuzzReadRanges: any cut of any bytes named .jsonl reads, over its two ranges, what the
// whole file holds.
func FuzzReadRanges(f *testing.F) {
	f.Add([]byte("{\"text\": \"a\"}\n{\"text\": \"b\"}\n"), uint16(7))
	f.Add([]byte("\n\n{\"text\": \"a\"}\r\nbad\n{\"text\": [\"x\", \"y\"]}"), uint16(17))
	f.Add([]byte("{\"text\": \"\"}\n"), uint16(0))
	dir := f.TempDir()
	file := filepath.Join(dir, "f.jsonl")
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if sniff(data[:min(len(data), 4)]) != plain {
			return
		}
		if err := os.WriteFile(file, data, 0o666); err != nil {
			t.Fatal(err)
		}
		c := int64(cut) % (int64(len(data)) + 1)
		opt := ReadOptions{OnError: Skip}
		want, wst := readRangeDocs(t, []FileRange{Whole(file)}, opt)
		a, ast := readRangeDocs(t, []FileRange{{File: file, End: c}}, opt)
		b, bst := readRangeDocs(t, []FileRange{{File: file, Start: c, End: int64(len(data))}}, opt)
		got := append(a, b...)
		if len(got) != len(want) {
			t.Fatalf("cut %d: %d documents, want %d", c, len(got), len(want))
		}
		for i := range got {
			if got[i].Text != want[i].Text {
				t.Fatalf("cut %d: document %d is %q, want %q", c, i, got[i].Text, want[i].Text)
			}
		}
		if ast.Bad+bst.Bad != wst.Bad || ast.Empty+bst.Empty != wst.Empty || ast.Bytes+bst.Bytes != wst.Bytes {
			t.Fatalf("cut %d: counts %+v + %+v, want %+v", c, ast, bst, wst)
		}
	})
}
