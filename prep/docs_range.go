package prep

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// FileRange is part of an input file, for ReadRanges: the whole file, or, for an
// uncompressed JSONL file (.jsonl), the lines that start in the bytes [Start, End).
//
// The rule is that a range owns the lines whose first byte lies in it (a line starts
// at offset 0 and after every '\n'), whatever the range's ends cut: a line that starts
// in the range is read to its end, past End if need be, and a line that starts before
// Start is left to the range before. Ranges that tile [0, size) therefore read every
// line exactly once, in order, wherever their ends fall, and a range may own no line
// at all. This is how a partitioned run (pipelines.TokenizeRun.NumWorkers) spreads a few
// large JSONL files over many workers without a pass over the data to find lines.
//
// Compressed files (.jsonl.zst, .jsonl.gz, ...), text files (one document each), zip
// and Parquet files cannot be cut into byte ranges: their byte offsets do not map to
// lines without decompressing what comes before. A JSONL file, compressed or not, can
// instead be read in stripes (StripeMod > 0, see Striped): the whole stream is
// decompressed, and only the lines of some stripes of it are parsed.
type FileRange struct {
	File string `json:"file"`
	// Start and End delimit the range in bytes; End < 0 means the whole file (Start
	// must then be 0). An End past the file's size is its size.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// StripeBytes, StripeMod and StripeRem, when StripeMod > 0, read the whole
	// file's lines but hand on only those that start in a stripe b (the bytes
	// [b·StripeBytes, (b+1)·StripeBytes) of the uncompressed stream) with
	// b mod StripeMod == StripeRem. See Striped.
	StripeBytes int64 `json:"stripe_bytes,omitempty"`
	StripeMod   int   `json:"stripe_mod,omitempty"`
	StripeRem   int   `json:"stripe_rem,omitempty"`
}

// Whole is the FileRange of all of file.
func Whole(file string) FileRange { return FileRange{File: file, End: -1} }

// IsWhole reports whether r is a whole file.
func (r FileRange) IsWhole() bool { return r.End < 0 }

// String names the range for messages: the file, "file[start:end]", or, for
// stripes, "file[stripes b%mod==rem of N bytes]".
func (r FileRange) String() string {
	if r.IsStriped() {
		return fmt.Sprintf("%s[stripes b%%%d==%d of %d bytes]", r.File, r.StripeMod, r.StripeRem, r.StripeBytes)
	}
	if r.IsWhole() {
		return r.File
	}
	return fmt.Sprintf("%s[%d:%d]", r.File, r.Start, r.End)
}

func wholeFiles(files []string) []FileRange {
	rs := make([]FileRange, len(files))
	for i, f := range files {
		rs[i] = Whole(f)
	}
	return rs
}

// Splittable reports whether file can be read in byte ranges: an uncompressed JSONL
// file, by its name (.jsonl).
func Splittable(file string) bool {
	f, ok := formatOf(file)
	return ok && f.kind == jsonlKind && f.comp == plain
}

// check reports a range that cannot be read as asked.
func (r FileRange) check(f format) error {
	if r.StripeMod != 0 || r.StripeBytes != 0 || r.StripeRem != 0 {
		return r.checkStripes(f)
	}
	switch {
	case r.IsWhole() && r.Start != 0:
		return &FileError{File: r.File, Err: fmt.Errorf("a whole-file range (End < 0) starts at byte %d", r.Start), Hint: "start it at 0"}
	case r.IsWhole():
		return nil
	case r.Start < 0 || r.End < r.Start:
		return &FileError{File: r.File, Err: fmt.Errorf("bad byte range [%d, %d)", r.Start, r.End), Hint: "a range needs 0 <= Start <= End"}
	case f.kind != jsonlKind || f.comp != plain:
		return &FileError{File: r.File, Err: fmt.Errorf("cannot read the byte range [%d, %d): only uncompressed .jsonl files are read in ranges", r.Start, r.End),
			Hint: "read the file whole"}
	}
	return nil
}

// readRange reads the lines of the uncompressed JSONL file that start in rg, a byte
// range of the file of size bytes.
func (r *docReader) readRange(file *os.File, rg FileRange, size int64) error {
	name := rg.File
	if err := r.checkPlain(file, name); err != nil {
		return err
	}
	end := min(rg.End, size)
	r.counter.limit = max(end-rg.Start, 0)
	if rg.Start >= end {
		return nil
	}
	// The first line that starts in the range: at Start if a line ends just before,
	// else after the first '\n' at or after Start.
	first := rg.Start
	if first > 0 {
		var prev [1]byte
		if _, err := file.ReadAt(prev[:], first-1); err != nil {
			return &FileError{File: name, Err: err}
		}
		if prev[0] != '\n' {
			if _, err := file.Seek(first, io.SeekStart); err != nil {
				return &FileError{File: name, Err: err}
			}
			// Looked for within the range only: a line that starts before it and
			// ends after it leaves the range no line (without the limit, each of the
			// pieces of a 200 MB line read to its end: ReadRangeBatchesParallel).
			br := bufio.NewReaderSize(io.LimitReader(r.counter, end-first), 64<<10)
			skipped, err := skipLine(br)
			switch {
			case errors.Is(err, io.EOF):
				return nil // the line before goes past the range, or the file ends in it
			case err != nil:
				return &FileError{File: name, Err: err}
			}
			first += skipped
		}
	}
	if first >= end {
		return nil
	}
	span := lineSpan{start: first, end: end, numbered: first == 0 || r.relativeLines}
	if mapped, err := r.readMapped(file, name, size, span, rg.Start); mapped {
		return err
	}
	if _, err := file.Seek(first, io.SeekStart); err != nil {
		return &FileError{File: name, Err: err}
	}
	return r.readJSONL(r.counter, name, span)
}

// checkPlain returns an error if the data of file, a .jsonl file, looks compressed.
func (r *docReader) checkPlain(file *os.File, name string) error {
	head := make([]byte, 4)
	n, err := file.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return &FileError{File: name, Err: err}
	}
	return compressedJSONL(name, head[:n])
}

// skipLine reads through the next '\n' and returns the bytes read, '\n' included; it
// returns io.EOF if the input ends first.
func skipLine(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		switch {
		case err == nil:
			return n, nil
		case err != bufio.ErrBufferFull:
			return n, err
		}
	}
}

// lineSpan says which lines of a stream readJSONL reads: those that start before end
// (end < 0: all), the first at offset start of the file; numbered says whether the
// line numbers are known (the stream starts at the file's first line). With stripes
// (stripeMod > 0), of those only the lines that start in a stripe the span owns.
type lineSpan struct {
	start, end int64
	numbered   bool

	stripeBytes, stripeMod, stripeRem int64
}

// allLines is the span of a whole stream.
var allLines = lineSpan{end: -1, numbered: true}
