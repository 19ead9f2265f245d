package prep

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet files are read with arrow-go's low-level reader, not its Arrow layer
// (pqarrow): one column (two when filtering by subset), a page at a time. Within a
// page, ReadBatchInPage hands out values that point into the decoded page, so each
// text is copied once, into its Doc, and a skipped or filtered-out row is not copied
// at all. Memory is a page or so (pages are about 1 MiB as HF datasets and pyarrow
// write them) whatever the size of the row groups.

// parquetBatch is how many rows are read at a time, at most.
const parquetBatch = 1024

// setColumn is the Parquet column naming a Pile record's subset: the meta group's
// pile_set_name (as the HF conversions of the Pile's JSONL write it).
const setColumn = metaKey + "." + setKey

// readerAtSeeker is an *os.File without its Close, which file.Reader.Close would call.
type readerAtSeeker struct{ f *os.File }

func (r readerAtSeeker) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
func (r readerAtSeeker) Seek(off int64, whence int) (int64, error) {
	return r.f.Seek(off, whence)
}

// parquetFile is an open Parquet file and the columns read.
type parquetFile struct {
	*file.Reader
	text, set int // the columns of the text and of the set name (-1 unless filtering)
}

// openParquet opens the Parquet file f, named name, and finds its text column key
// and, if filtering, its set column. Errors are *FileErrors.
func openParquet(f *os.File, name, key string, filtering bool) (pf *parquetFile, err error) {
	props := parquet.NewReaderProperties(nil)
	props.BufferedStreamEnabled = true // read a page at a time, not whole column chunks
	props.BufferSize = 1 << 20
	var pr *file.Reader
	func() {
		defer catch(&err)
		pr, err = file.NewParquetReader(readerAtSeeker{f}, file.WithReadProps(props))
	}()
	if err != nil {
		return nil, &FileError{File: name, Err: fmt.Errorf("not a readable Parquet file: %w", err), Hint: hintCorrupt}
	}
	sc := pr.MetaData().Schema
	pf = &parquetFile{Reader: pr, set: -1}
	if pf.text, err = stringColumn(sc, key); err != nil {
		return nil, &FileError{File: name, Err: err, Hint: "set the text key (--text-key) to the column holding the text"}
	}
	if filtering {
		if pf.set, err = stringColumn(sc, setColumn); err != nil {
			return nil, &FileError{File: name, Err: fmt.Errorf("cannot filter by subset: %w", err),
				Hint: "drop the subset filter for this file"}
		}
	}
	return pf, nil
}

// checkParquet checks that the Parquet file name has the columns ReadDocs needs.
func checkParquet(name, key string, filtering bool) error {
	f, err := os.Open(name)
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	defer f.Close()
	_, err = openParquet(f, name, key, filtering)
	return err
}

// stringColumn returns the index of the column path (dotted, for a column in a
// group) in sc, if it holds strings or binary, one value per row.
func stringColumn(sc *schema.Schema, path string) (int, error) {
	i := sc.ColumnIndexByName(path)
	if i < 0 {
		var names []string
		for j, col := range sc.Columns() {
			if j == 20 {
				names = append(names, fmt.Sprintf("%d more", sc.NumColumns()-j))
				break
			}
			names = append(names, fmt.Sprintf("%q", col.Path()))
		}
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return -1, fmt.Errorf("column %q %w (the file has %s)", path, ErrMissing, have)
	}
	col := sc.Column(i)
	lt := col.LogicalType()
	switch {
	case col.MaxRepetitionLevel() > 0:
		return -1, &columnTypeError{path, "repeated (a list)"}
	case col.PhysicalType() != parquet.Types.ByteArray:
		return -1, &columnTypeError{path, col.PhysicalType().String()}
	case !lt.IsNone() && !lt.Equals(schema.StringLogicalType{}) && !lt.Equals(schema.EnumLogicalType{}):
		return -1, &columnTypeError{path, fmt.Sprintf("%s (%s)", col.PhysicalType(), lt)}
	}
	return i, nil
}

// columnTypeError is ErrNotText for a Parquet column.
type columnTypeError struct{ column, typ string }

func (e *columnTypeError) Error() string {
	return fmt.Sprintf("column %q is %s, want a string or binary column", e.column, e.typ)
}

// Unwrap returns ErrNotText.
func (e *columnTypeError) Unwrap() error { return ErrNotText }

// catch turns a panic of the Parquet reader, which corrupt data can cause, into
// *err. Only the reader's calls run under it, never fn.
func catch(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("the Parquet reader failed: %v", p)
	}
}

// readParquet reads each row of the Parquet file f (size bytes, named name) as one
// document. A corrupt page is a corrupt record: with Skip, the rest of its row group
// is skipped and the next row group read.
func (r *docReader) readParquet(f *os.File, name string, size int64) error {
	pf, err := openParquet(f, name, r.key, r.filtering())
	if err != nil {
		return err
	}
	rows := pf.NumRows()
	var first int64 // the rows of the row groups before
	for g := range pf.NumRowGroups() {
		rg := pf.RowGroup(g)
		if err := r.readRowGroup(pf, rg, name, first, func(done int64) {
			if rows > 0 {
				r.counter.set(size * min(first+done, rows) / rows)
			}
		}); err != nil {
			return err
		}
		first += rg.NumRows()
	}
	return nil
}

// readRowGroup reads the rows of rg, whose first is row first+1 of the file; at is
// told how many of them have been read.
func (r *docReader) readRowGroup(pf *parquetFile, rg *file.RowGroupReader, name string, first int64, at func(int64)) error {
	n := rg.NumRows()
	cols, err := openColumns(rg, pf.text, pf.set)
	if err != nil {
		return r.corrupt(&FileError{File: name, Line: int(first + 1), Err: err}, r.rowsUnread(pf, n))
	}
	defer cols.close()
	for done := int64(0); done < n; {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		k, err := cols.next(min(parquetBatch, n-done))
		if err == nil && k == 0 {
			err = fmt.Errorf("the row group ends after %d of its %d rows", done, n)
		}
		if err != nil {
			return r.corrupt(&FileError{File: name, Line: int(first + done + 1), Err: err}, r.rowsUnread(pf, n-done))
		}
		if err := r.parquetRows(cols, k, name, first+done); err != nil {
			return err
		}
		done += int64(k)
		at(done)
	}
	return nil
}

// rowsUnread estimates the bytes of k rows of the file not read, by their share of the
// rows (as the progress counts them).
func (r *docReader) rowsUnread(pf *parquetFile, k int64) int64 {
	if rows := pf.NumRows(); rows > 0 {
		return r.fileSize * k / rows
	}
	return 0
}

// parquetRows takes the k rows just read by cols, the first of which follows row
// before of the file, through the steps of a record.
func (r *docReader) parquetRows(cols *pqColumns, k int, name string, before int64) error {
	vi, si := 0, 0 // the next text and set values: nulls have none
	for j := range k {
		var text []byte
		present := cols.textDef == 0 || cols.defs[j] == cols.textDef
		if present {
			text = cols.values[vi]
			vi++
		}
		if cols.set != nil {
			named := cols.setDef == 0 || cols.setDefs[j] == cols.setDef
			var set []byte
			if named {
				set = cols.setValues[si]
				si++
			}
			switch {
			case !named:
				r.stats.Filtered++
				r.stats.NoMeta++
				continue
			case string(set) != r.filter:
				r.stats.Filtered++
				continue
			}
		}
		line := int(before) + j + 1
		if !present {
			err := &FileError{File: name, Line: line, Err: fmt.Errorf("the text (column %q) is null", r.key),
				Hint: "fill or drop the rows whose text is null, or set the text key (--text-key) to the column holding the text; prep counts such rows as bad records and goes on"}
			if err := r.bad(ReasonNotText, err); err != nil {
				return err
			}
			continue
		}
		if err := r.offerBytes(text, name, line); err != nil {
			return err
		}
	}
	return nil
}

// pqColumns reads the text column (and the set column) of a row group in step.
type pqColumns struct {
	text, set       *file.ByteArrayColumnChunkReader // set is nil unless filtering
	textDef, setDef int16                            // max definition levels: lower is null
	values          []parquet.ByteArray              // the text values read (nulls have none)
	defs            []int16                          // the text's definition levels, if it may be null
	setValues       []parquet.ByteArray
	setDefs         []int16
}

// openColumns opens the columns text and set (if not -1) of rg.
func openColumns(rg *file.RowGroupReader, text, set int) (cols *pqColumns, err error) {
	defer catch(&err)
	cols = &pqColumns{values: make([]parquet.ByteArray, parquetBatch)}
	open := func(i int) (*file.ByteArrayColumnChunkReader, int16, []int16, error) {
		cr, err := rg.Column(i)
		if err != nil {
			return nil, 0, nil, err
		}
		bcr, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			cr.Close()
			return nil, 0, nil, errors.New("the column chunk is not of byte arrays") // the schema said it was
		}
		def := cr.Descriptor().MaxDefinitionLevel()
		var defs []int16
		if def > 0 {
			defs = make([]int16, parquetBatch)
		}
		return bcr, def, defs, nil
	}
	if cols.text, cols.textDef, cols.defs, err = open(text); err != nil {
		return nil, err
	}
	if set >= 0 {
		if cols.set, cols.setDef, cols.setDefs, err = open(set); err != nil {
			cols.close()
			return nil, err
		}
		cols.setValues = make([]parquet.ByteArray, parquetBatch)
	}
	return cols, nil
}

// next reads the next rows, at most max, all from one page of the text column. The
// text values point into the page: they are good until the next call.
func (c *pqColumns) next(max int64) (rows int, err error) {
	defer catch(&err)
	n, _, err := c.text.ReadBatchInPage(max, c.values, c.defs, nil)
	if err == nil && n == 0 {
		err = c.text.Err()
	}
	if err != nil || n == 0 || c.set == nil {
		return int(n), err
	}
	// The set names are copied (ReadBatch reads across pages); they are short.
	got, _, err := c.set.ReadBatch(n, c.setValues, c.setDefs, nil)
	if err == nil && got != n {
		err = fmt.Errorf("column %q ends before the text column", setColumn)
	}
	return int(n), err
}

// close releases the column readers (even after a corrupt page made one panic).
func (c *pqColumns) close() {
	var err error
	defer catch(&err)
	c.text.Close()
	if c.set != nil {
		c.set.Close()
	}
}
