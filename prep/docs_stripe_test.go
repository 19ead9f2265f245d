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

	"github.com/klauspost/compress/zstd"
)

// readStripes reads the k striped ranges of file, one by one, and returns their
// documents taken stripe by stripe, and their counts added up.
func readStripes(t testing.TB, file string, stripeBytes int64, k int, opt ReadOptions) ([]Doc, Stats) {
	t.Helper()
	var all []Doc
	var sum Stats
	for j := range k {
		docs, st := readRangeDocs(t, []FileRange{Striped(file, stripeBytes, k, j)}, opt)
		for i, d := range docs {
			if d.Stripe%int64(k) != int64(j) || i > 0 && d.Stripe < docs[i-1].Stripe {
				t.Fatalf("%s: reader %d of %d handed on document %d of stripe %d (after stripe %d)", file, j, k, i, d.Stripe, docs[max(i-1, 0)].Stripe)
			}
		}
		all = append(all, docs...)
		sum.Docs += st.Docs
		sum.Bad += st.Bad
		sum.Truncated += st.Truncated
		sum.Empty += st.Empty
		sum.Filtered += st.Filtered
		sum.TextBytes += st.TextBytes
		sum.Files += st.Files
		if fi, _ := os.Stat(file); st.Bytes != fi.Size() {
			t.Fatalf("%s: reader %d of %d counted %d bytes, the file has %d", file, j, k, st.Bytes, fi.Size())
		}
	}
	slices.SortStableFunc(all, func(a, b Doc) int { return int(a.Stripe - b.Stripe) })
	return all, sum
}

// sameDocs fails unless got, read in stripes, are want, read whole: the same texts and
// line numbers, in order.
func sameDocs(t testing.TB, what string, got, want []Doc) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d documents, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].Text != want[i].Text || got[i].Line != want[i].Line || got[i].Source != want[i].Source {
			t.Fatalf("%s: document %d is %.40q line %d, want %.40q line %d", what, i, got[i].Text, got[i].Line, want[i].Text, want[i].Line)
		}
	}
}

// TestReadStripesTile checks the rule that lets several workers share a compressed
// file: its k striped ranges hand on, stripe by stripe, the documents of the whole file
// in order, each line once (long lines across many stripes, blank lines, bad records,
// no final newline), and count its records once; each reads all of the file's bytes.
func TestReadStripesTile(t *testing.T) {
	dir := t.TempDir()
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 11))
		data := rangeCorpus(r, 30+r.IntN(60))
		for _, ext := range []string{".jsonl.zst", ".jsonl.gz", ".json.gz", ".jsonl"} {
			file := filepath.Join(dir, fmt.Sprintf("s%d%s", seed, ext))
			if err := os.WriteFile(file, smallCompress(t, file, []byte(data)), 0o644); err != nil {
				t.Fatal(err)
			}
			opt := ReadOptions{OnError: Skip, MaxBadExamples: 1000}
			want, wantSt := readRangeDocs(t, []FileRange{Whole(file)}, opt)
			for _, k := range []int{2, 3, 7} {
				stripe := int64(1 + r.IntN(len(data)/4+1))
				got, sum := readStripes(t, file, stripe, k, opt)
				what := fmt.Sprintf("%s in %d stripes of %d bytes", filepath.Base(file), k, stripe)
				sameDocs(t, what, got, want)
				if sum.Docs != wantSt.Docs || sum.Bad != wantSt.Bad || sum.Empty != wantSt.Empty || sum.TextBytes != wantSt.TextBytes || sum.Files != k {
					t.Fatalf("%s: counted %+v, the whole file %+v", what, sum, wantSt)
				}
				for _, d := range got {
					if !strings.HasPrefix(data[lineStart(data, d.Line):], "{") {
						t.Fatalf("%s: line %d does not start a record", what, d.Line)
					}
					if b := lineStart(data, d.Line) / stripe; d.Stripe != b {
						t.Fatalf("%s: line %d starts in stripe %d, the document says %d", what, d.Line, b, d.Stripe)
					}
				}
			}
		}
	}
}

// smallCompress is compress with zstd's default window (a frame of small content
// declares a small one), so that every reader does not clear a 128 MiB window.
func smallCompress(t testing.TB, name string, data []byte) []byte {
	t.Helper()
	if !strings.HasSuffix(name, ".zst") {
		return compress(t, name, data)
	}
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	return zw.EncodeAll(data, nil)
}

// lineStart is the byte offset of line n (from 1) of data.
func lineStart(data string, n int) int64 {
	off := 0
	for range n - 1 {
		off += strings.IndexByte(data[off:], '\n') + 1
	}
	return int64(off)
}

// TestReadStripesCorrupt: a stream that breaks off is counted once (AcceptTruncated), by the reader that
// owns the stripe of the line it breaks in; the others stop there quietly, and with
// OnError Fail only that owner fails.
func TestReadStripesCorrupt(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "{\"text\": \"document %d %s\"}\n", i, strings.Repeat("y", i%50))
	}
	data := compress(t, "x.jsonl.gz", []byte(b.String()))
	file := filepath.Join(dir, "cut.jsonl.gz")
	if err := os.WriteFile(file, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	opt := ReadOptions{OnError: Skip, AcceptTruncated: true}
	want, wantSt := readRangeDocs(t, []FileRange{Whole(file)}, opt)
	if wantSt.Truncated != 1 || len(want) == 0 {
		t.Fatalf("the cut file read whole: %+v", wantSt)
	}
	got, sum := readStripes(t, file, 500, 3, opt)
	sameDocs(t, "cut file in 3 stripes", got, want)
	if sum.Truncated != 1 || sum.Docs != wantSt.Docs {
		t.Fatalf("cut file in 3 stripes: counted %+v, read whole %+v", sum, wantSt)
	}
	failed := 0
	for j := range 3 {
		_, err := ReadRanges(context.Background(), []FileRange{Striped(file, 500, 3, j)}, ReadOptions{OnError: Fail}, func(Doc) error { return nil })
		var fe *FileError
		switch {
		case errors.As(err, &fe) && fe.Line > 0:
			failed++
		case err != nil:
			t.Fatalf("reader %d of 3: %v", j, err)
		}
	}
	if failed != 1 {
		t.Fatalf("%d readers failed on the break, want 1", failed)
	}
}

// TestReadStripesRefuses stripes that cannot be read.
func TestReadStripesRefuses(t *testing.T) {
	dir := t.TempDir()
	zst := writeCorpusFile(t, dir, "a.jsonl.zst", "{\"text\": \"z\"}\n")
	txt := writeCorpusFile(t, dir, "b.txt.zst", "text")
	for _, rg := range []FileRange{
		Striped(txt, 10, 2, 0), Striped(zst, 0, 2, 0), Striped(zst, 10, 2, 2), Striped(zst, 10, 0, 0), Striped(zst, 10, 2, -1),
		{File: zst, End: 5, StripeBytes: 10, StripeMod: 2}, {File: zst, End: -1, StripeRem: 1},
	} {
		_, err := ReadRanges(context.Background(), []FileRange{rg}, ReadOptions{}, func(Doc) error { return nil })
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Errorf("%v: got %v, want a FileError", rg, err)
		}
	}
	if !Stripable(zst) || Stripable(txt) || !Stripable("x.jsonl") || !Stripable("c4.JSON.GZ") || Stripable("p.parquet") {
		t.Error("Stripable is wrong")
	}
	if s := Striped("a.jsonl.zst", 64, 3, 1).String(); s != "a.jsonl.zst[stripes b%3==1 of 64 bytes]" {
		t.Errorf("String: %s", s)
	}
}

// FuzzReadStripes: any bytes, zstd-compressed, read in k stripes of any size, hand on
// stripe by stripe what the whole file holds, and count it once.
func FuzzReadStripes(f *testing.F) {
	f.Add([]byte("{\"text\": \"a\"}\n{\"text\": \"b\"}\n"), uint16(7), uint8(2))
	f.Add([]byte("\n\n{\"text\": \"a\"}\r\nbad\n{\"text\": [\"x\", \"y\"]}"), uint16(3), uint8(3))
	f.Add([]byte("{\"text\": \"\"}\n"), uint16(0), uint8(1))
	dir := f.TempDir()
	file := filepath.Join(dir, "f.jsonl.zst")
	f.Fuzz(func(t *testing.T, data []byte, stripe uint16, k uint8) {
		if err := os.WriteFile(file, smallCompress(t, file, data), 0o666); err != nil {
			t.Fatal(err)
		}
		opt := ReadOptions{OnError: Skip}
		want, wst := readRangeDocs(t, []FileRange{Whole(file)}, opt)
		got, sum := readStripes(t, file, 1+int64(stripe), 1+int(k%8), opt)
		sameDocs(t, "stripes", got, want)
		if sum.Bad != wst.Bad || sum.Empty != wst.Empty || sum.Docs != wst.Docs || sum.TextBytes != wst.TextBytes {
			t.Fatalf("counts %+v, want %+v", sum, wst)
		}
	})
}
