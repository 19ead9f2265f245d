package prep

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMissing: a JSONL line has no member holding the text.
var ErrMissing = errors.New("missing")

// FileError is a problem with a corpus file, or one of its lines. Its message starts
// with the file's name (the command that reads it puts its own name first:
// "tokenize run: FILE line N: ...").
type FileError struct {
	File string
	Line int // the line, from 1; 0 when the problem is not with one line
	// Offset is the byte offset of the line in the file (its data, once
	// decompressed) when Line is 0 but the problem is with one line: a line of a
	// byte range read from the middle of a file (ReadRanges), whose number is not
	// known. 0 otherwise.
	Offset int64
	Err    error  // what is wrong
	Hint   string // the next step to take, if there is one
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(Where(e.File, e.Line, e.Offset))
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Where names a record of file: "FILE line N" (a Parquet file's: "FILE row N", its
// Line being the row), "FILE line at byte N" where only its offset is known
// (FileError.Offset), or FILE alone where line and offset are 0.
func Where(file string, line int, offset int64) string {
	switch {
	case line > 0:
		if f, ok := formatOf(file); ok && f.kind == parquetKind {
			return fmt.Sprintf("%s row %d", file, line)
		}
		return fmt.Sprintf("%s line %d", file, line)
	case offset > 0:
		return fmt.Sprintf("%s line at byte %d", file, offset)
	}
	return file
}

// Unwrap returns Err.
func (e *FileError) Unwrap() error { return e.Err }

// Hints shared by several errors.
const (
	hintCorrupt   = "the file may be truncated or corrupt: download it again"
	hintTruncated = "the last line is cut short, so the file looks truncated: download it again"
	hintNotJSONL  = "is this file JSONL? plain text files must end in .txt"
	hintBOM       = "the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: remove it (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)"
)

// HintCorrupt begins the hint of a file that may be truncated or corrupt ("download it
// again"): a command that downloaded the file itself, and would find it in place on a
// rerun, replaces it with its own next step.
const HintCorrupt = hintCorrupt

// utf8BOM is the UTF-8 byte order mark some Windows editors write first.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// lineError explains err, TextField's error on line n of file (fileStart: the file's
// first line): terminated is whether the line ended with a newline.
func lineError(file string, n int, fileStart bool, err error, terminated bool) *FileError {
	e := &FileError{File: file, Line: n, Err: err}
	switch {
	case fileStart && (errors.Is(err, ErrInvalidJSON) || errors.Is(err, ErrNotObject)):
		e.Hint = hintNotJSONL
	case errors.Is(err, ErrInvalidJSON) && !terminated:
		e.Hint = hintTruncated
	case (errors.Is(err, ErrInvalidJSON) || errors.Is(err, ErrNotObject)) && compressedName(file):
		// Damage inside a compressed stream decodes to garbage before any checksum
		// at its end can say so.
		e.Hint = "fix or delete the line; in a compressed file a damaged stream reads this way too: test it (gzip -t, zstd -t) and download it again"
	case errors.Is(err, ErrInvalidJSON) || errors.Is(err, ErrNotObject):
		e.Hint = "fix or delete the line"
	case errors.Is(err, ErrNotText):
		e.Hint = "the text must be a string or a list of strings: set the text key (--text-key) to the field holding it"
	}
	return e
}

// missingError is the error for line n of file, an object without member key.
func missingError(file string, n int, line []byte, key string) *FileError {
	names := memberNames(line)
	have := "none"
	if len(names) > 0 {
		var quoted []string
		for i, name := range names {
			if i == 10 {
				quoted = append(quoted, fmt.Sprintf("%d more", len(names)-i))
				break
			}
			quoted = append(quoted, fmt.Sprintf("%q", name))
		}
		have = strings.Join(quoted, ", ")
	}
	return &FileError{File: file, Line: n, Err: fmt.Errorf("field %q %w (the line has %s)", key, ErrMissing, have),
		Hint: "set the text key (--text-key) to the field holding the text"}
}

// compressedName reports whether a file's name says it is gzip or zstd compressed.
func compressedName(file string) bool {
	f := strings.ToLower(file)
	return strings.HasSuffix(f, ".gz") || strings.HasSuffix(f, ".zst")
}
