package prep

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// pqRow is a row of a test Parquet file: nil is null.
type pqRow struct {
	text *string
	set  *string // meta.pile_set_name; nil: meta is null
}

func ptr(s string) *string { return &s }

// writeParquet writes rows into dir/name as a Parquet file with arrow-go's writer:
// columns id (int64), text (of type textType) and meta (a struct holding
// pile_set_name), rowGroup rows to a row group, with the writer's defaults
// (dictionary encoding, no compression) unless opts say otherwise. It returns the path.
func writeParquet(t testing.TB, dir, name string, textType arrow.DataType, rowGroup int64, rows []pqRow, opts ...parquet.WriterProperty) string {
	t.Helper()
	metaType := arrow.StructOf(arrow.Field{Name: "pile_set_name", Type: arrow.BinaryTypes.String, Nullable: true})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "text", Type: textType, Nullable: true},
		{Name: "meta", Type: metaType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	meta := b.Field(2).(*array.StructBuilder)
	set := meta.FieldBuilder(0).(*array.StringBuilder)
	for i, row := range rows {
		ids.Append(int64(i))
		switch tb := b.Field(1).(type) {
		case *array.StringBuilder:
			appendOrNull(tb, row.text, tb.Append)
		case *array.LargeStringBuilder:
			appendOrNull(tb, row.text, tb.Append)
		case *array.BinaryBuilder:
			appendOrNull(tb, row.text, func(s string) { tb.Append([]byte(s)) })
		case *array.Int64Builder:
			tb.Append(int64(len(*row.text)))
		default:
			t.Fatalf("no builder for %T", tb)
		}
		if row.set == nil {
			meta.AppendNull()
		} else {
			meta.Append(true)
			set.Append(*row.set)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(rowGroup)}, opts...)...)
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func appendOrNull(b array.Builder, s *string, appendFn func(string)) {
	if s == nil {
		b.AppendNull()
		return
	}
	appendFn(*s)
}

// pileRows returns n rows, text "doc i", of sets Pile-CC and Enron Emails in turn,
// with row 4 empty, row 6 null and row 8 without meta (when n is large enough).
func pileRows(n int) []pqRow {
	rows := make([]pqRow, n)
	for i := range rows {
		rows[i] = pqRow{ptr("doc " + strings.Repeat("x", i)), ptr([]string{"Pile-CC", "Enron Emails"}[i%2])}
	}
	if n > 8 {
		rows[4].text = ptr("")
		rows[6].text = nil
		rows[8].set = nil
	}
	return rows
}

func TestReadParquet(t *testing.T) {
	dir := t.TempDir()
	rows := pileRows(23)
	var want []Doc
	path := writeParquet(t, dir, "a.parquet", arrow.BinaryTypes.String, 5, rows) // 5 row groups
	for i, row := range rows {
		if row.text != nil && *row.text != "" {
			want = append(want, Doc{*row.text, path, i + 1, 0, 0, 0})
		}
	}
	var progressBytes int64
	docs, stats, err := readAll(t, []string{path}, ReadOptions{Progress: func(b, _ int64) { progressBytes += b }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(docs, want) {
		t.Errorf("docs\n%v\nwant\n%v", docs, want)
	}
	size, _ := TotalBytes([]string{path})
	if stats.Docs != 21 || stats.Empty != 1 || stats.Bad != 1 || stats.Files != 1 || stats.Bytes != size || progressBytes != size {
		t.Errorf("stats %+v, progress %d bytes; want 21 docs, 1 empty, 1 bad, %d bytes", stats, progressBytes, size)
	}
	ex := stats.BadRecords.Examples
	if len(ex) != 1 || ex[0] != (BadRecord{File: path, Line: 7, Reason: ReasonNotText, Error: `the text (column "text") is null (fill or drop the rows whose text is null, or set the text key (--text-key) to the column holding the text; prep counts such rows as bad records and goes on)`}) {
		t.Errorf("bad records %+v", ex)
	}

	// Fail: the null row stops the reading, after the rows before it.
	docs, _, err = readAll(t, []string{path}, ReadOptions{OnError: Fail})
	if err == nil || !strings.Contains(err.Error(), "a.parquet row 7: the text") || len(docs) != 5 {
		t.Errorf("Fail: %d docs, err %v", len(docs), err)
	}
}

func TestReadParquetColumnTypes(t *testing.T) {
	dir := t.TempDir()
	rows := []pqRow{{ptr("one"), nil}, {ptr("two \xff bad"), nil}, {ptr("three"), nil}}
	plain := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(pqcompress.Codecs.Zstd)}
	for _, tt := range []struct {
		name string
		typ  arrow.DataType
		opts []parquet.WriterProperty
	}{
		{"string", arrow.BinaryTypes.String, nil},
		{"string, plain encoding, zstd", arrow.BinaryTypes.String, plain},
		{"large_string", arrow.BinaryTypes.LargeString, nil},
		{"binary", arrow.BinaryTypes.Binary, nil},
		{"binary, plain encoding, zstd", arrow.BinaryTypes.Binary, plain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeParquet(t, dir, strings.ReplaceAll(tt.name, " ", "")+".parquet", tt.typ, 2, rows, tt.opts...)
			docs, stats, err := readAll(t, []string{path}, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []Doc{{"one", path, 1, 0, 0, 0}, {"two \uFFFD bad", path, 2, 0, 0, 0}, {"three", path, 3, 0, 0, 0}}
			if !slices.Equal(docs, want) || stats.InvalidUTF8 != 1 {
				t.Errorf("docs %+v, %d with invalid UTF-8", docs, stats.InvalidUTF8)
			}
		})
	}
}

func TestReadParquetSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeCorpusFile(t, dir, "good.jsonl", `{"text":"a"}`+"\n")
	ints := writeParquet(t, dir, "ints.parquet", arrow.PrimitiveTypes.Int64, 10, pileRows(3))
	strs := writeParquet(t, dir, "strs.parquet", arrow.BinaryTypes.String, 10, pileRows(3))
	notParquet := writeCorpusFile(t, dir, "text.parquet", "PAR1 is not enough")
	tests := []struct {
		name  string
		file  string
		opt   ReadOptions
		is    error
		wants []string
	}{
		{"not a string column", ints, ReadOptions{}, ErrNotText,
			[]string{"ints.parquet: ", `column "text" is INT64, want a string or binary column`, "--text-key"}},
		{"missing column", strs, ReadOptions{TextKey: "body"}, ErrMissing,
			[]string{"strs.parquet: ", `column "body" missing (the file has "id", "text", "meta.pile_set_name")`, "--text-key"}},
		{"a group, not a column", strs, ReadOptions{TextKey: "meta"}, ErrMissing, []string{`column "meta" missing`}},
		{"nested column", strs, ReadOptions{TextKey: "meta.pile_set_name"}, nil, nil},
		{"not Parquet", notParquet, ReadOptions{}, nil, []string{"text.parquet: not a readable Parquet file", "download it again"}},
		{"filter without meta", ints, ReadOptions{TextKey: "id", FilterSet: "x"}, ErrNotText, []string{`column "id" is INT64`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, _, err := readAll(t, []string{good, tt.file}, tt.opt)
			if tt.wants == nil {
				if err != nil || len(docs) != 3 { // good.jsonl has no such member
					t.Fatalf("%d docs, err %v", len(docs), err)
				}
				return
			}
			if err == nil || len(docs) != 0 {
				t.Fatalf("%d docs, err %v: want an error before reading", len(docs), err)
			}
			if _, isFile := errors.AsType[*FileError](err); !isFile || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("error %q (%T) is not a *FileError of %v", err, err, tt.is)
			}
			for _, want := range tt.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestReadParquetFilterAndSkip(t *testing.T) {
	dir := t.TempDir()
	rows := pileRows(40)
	path := writeParquet(t, dir, "pile.parquet", arrow.BinaryTypes.String, 7, rows)
	var want []Doc
	var noMeta, filtered int64
	for i, row := range rows {
		switch {
		case row.set == nil:
			noMeta++
			filtered++
		case *row.set != "Enron Emails":
			filtered++
		case row.text != nil && *row.text != "":
			want = append(want, Doc{*row.text, path, i + 1, 0, 0, 0})
		}
	}
	opt := ReadOptions{FilterSet: "Enron Emails"}
	docs, stats, err := readAll(t, []string{path}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(docs, want) || stats.Filtered != filtered || stats.NoMeta != noMeta || stats.Bad != 0 {
		t.Errorf("got %d docs (%+v), want %d, %d filtered, %d without meta", len(docs), stats, len(want), filtered, noMeta)
	}
	checkSkipDocs(t, []string{path}, opt, docs, stats)
}

// TestReadParquetCorrupt garbles bytes of a Parquet file's pages: reading must
// not panic, and with Skip whatever it reads is a prefix of each row group.
func TestReadParquetCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := writeParquet(t, dir, "c.parquet", arrow.BinaryTypes.String, 50, pileRows(200))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	footer := int(uint32(data[len(data)-8]) | uint32(data[len(data)-7])<<8 | uint32(data[len(data)-6])<<16 | uint32(data[len(data)-5])<<24)
	pages := len(data) - 8 - footer
	for off := 4; off < pages; off += max(1, pages/40) {
		bad := slices.Clone(data)
		for i := off; i < min(off+24, pages); i++ {
			bad[i] ^= 0xa5
		}
		name := filepath.Join(dir, "bad.parquet")
		if err := os.WriteFile(name, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		docs, stats, err := readAll(t, []string{name}, ReadOptions{})
		if err != nil {
			if _, isFile := errors.AsType[*FileError](err); !isFile {
				t.Fatalf("offset %d: error %v is not a *FileError", off, err)
			}
			continue
		}
		if stats.Records() > 200 || int64(len(docs)) != stats.Docs {
			t.Errorf("offset %d: %+v", off, stats)
		}
		if _, _, err := readAll(t, []string{name}, ReadOptions{OnError: Fail}); (err == nil) != (stats.Bad == 0) {
			t.Errorf("offset %d: Fail gives %v, Skip found %d bad", off, err, stats.Bad)
		}
	}
}
