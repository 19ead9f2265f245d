package prep

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gptkit/internal/inflate"
)

// ErrUnknownFormat: a file's name does not say how to read it.
var ErrUnknownFormat = errors.New("unknown format")

// compression is how a file's bytes are compressed.
type compression int

const (
	plain compression = iota
	gzipped
	zstded
)

func (c compression) String() string {
	return [...]string{"plain", "gzip", "zstd"}[c]
}

// suffix is the file name suffix of c.
func (c compression) suffix() string {
	return [...]string{"", ".gz", ".zst"}[c]
}

// kind is how a file holds its documents.
type kind int

const (
	jsonlKind   kind = iota // one JSON object per line
	textKind                // the whole file is one document
	zipKind                 // each member of a zip archive is one document
	parquetKind             // each row of a Parquet file is one document
)

// format is how to read a file, by the end of its name.
type format struct {
	suffix string
	kind   kind
	comp   compression
}

// formats are the readable files, by name.
var formats = []format{
	{".jsonl", jsonlKind, plain},
	{".jsonl.zst", jsonlKind, zstded},
	{".jsonl.gz", jsonlKind, gzipped},
	{".json.gz", jsonlKind, gzipped}, // C4's name for gzipped JSONL
	{".txt", textKind, plain},
	{".txt.zst", textKind, zstded},
	{".txt.gz", textKind, gzipped},
	{".zip", zipKind, plain},
	{".parquet", parquetKind, plain},
}

// formatOf returns the format of the file name (its suffix, in any case).
func formatOf(name string) (format, bool) {
	lower := strings.ToLower(name)
	for _, f := range formats {
		if strings.HasSuffix(lower, f.suffix) {
			return f, true
		}
	}
	return format{}, false
}

// formatList lists the suffixes of formats for messages.
// CheckFormatName reports, before anything is read or downloaded, whether name (a file's
// or a URL path's last element) tells a format the readers know: nil, or an error that
// lists the suffixes.
func CheckFormatName(name string) error {
	if _, ok := formatOf(name); !ok {
		return fmt.Errorf("%w: the name must end in one of %s", ErrUnknownFormat, formatList())
	}
	return nil
}

func formatList() string {
	s := make([]string, len(formats))
	for i, f := range formats {
		s[i] = f.suffix
	}
	return strings.Join(s, ", ")
}

// checkFiles returns the format of each file, or an error if one is unknown or a
// file cannot be read: key is the text key, filtering whether records are filtered
// by their subset (which .txt and .zip files cannot be). A Parquet file's schema is
// checked too.
func checkFiles(files []string, key string, filtering bool) ([]format, error) {
	fs := make([]format, len(files))
	for i, name := range files {
		f, ok := formatOf(name)
		if !ok {
			if fi, err := os.Stat(name); err == nil && fi.IsDir() {
				return nil, &FileError{File: name, Err: errors.New("is a directory"), Hint: "name the files in it (" + filepath.Join(name, "*.jsonl") + ", ...)"}
			}
			return nil, &FileError{File: name, Err: ErrUnknownFormat, Hint: "name it with one of " + formatList()}
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("prep: %w", err)
		}
		if fi.IsDir() {
			return nil, &FileError{File: name, Err: errors.New("is a directory"), Hint: "name the files in it"}
		}
		if filtering && (f.kind == textKind || f.kind == zipKind) {
			return nil, &FileError{File: name, Err: errors.New("a filter by subset (pile_set_name) needs records with metadata, and this file has none"),
				Hint: "filter JSONL or Parquet files, or drop the filter"}
		}
		if f.kind == parquetKind {
			if err := checkParquet(name, key, filtering); err != nil {
				return nil, err
			}
		}
		fs[i] = f
	}
	return fs, nil
}

// decompress returns the data of file name, read from r, and a function that frees
// the decompressor. It checks the data's first bytes against the name's compression.
func decompress(r io.Reader, name string, f format) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 256<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, nil, &FileError{File: name, Err: err}
	}
	actual := sniff(head)
	switch {
	case f.comp == plain && actual != plain:
		return nil, nil, &FileError{File: name, Err: fmt.Errorf("the data is %s-compressed", actual),
			Hint: fmt.Sprintf("rename the file to end in %s%s", f.suffix, actual.suffix())}
	case f.comp != plain && len(head) == 0:
		return nil, nil, &FileError{File: name, Err: fmt.Errorf("the file is empty, not %s data", f.comp),
			Hint: "download it again"}
	case f.comp != plain && actual != f.comp:
		return nil, nil, &FileError{File: name, Err: fmt.Errorf("not %s data (it starts with % x)", f.comp, head),
			Hint: fmt.Sprintf("if it is not compressed, drop %s from its name", f.comp.suffix())}
	}
	switch f.comp {
	case gzipped:
		zr, err := inflate.NewGzipReader(br)
		if err != nil {
			return nil, nil, &FileError{File: name, Err: err, Hint: hintCorrupt}
		}
		return zr, func() { zr.Close() }, nil
	case zstded:
		zr, closeZr, err := newZstdReader(br)
		if err != nil {
			return nil, nil, &FileError{File: name, Err: err}
		}
		return zr, closeZr, nil
	}
	return br, func() {}, nil
}

// sniff says how data starting with head is compressed.
func sniff(head []byte) compression {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return gzipped
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return zstded
	case len(head) == 4 && head[0]&0xf0 == 0x50 && bytes.Equal(head[1:], []byte{0x2a, 0x4d, 0x18}):
		return zstded // a skippable frame
	}
	return plain
}
