package prep

import (
	"context"
	"fmt"
	"os"
)

// DefaultTextKey is the JSONL member holding the text unless ReadOptions say otherwise.
const DefaultTextKey = "text"

// Doc is one document of a corpus.
type Doc struct {
	// Text is always valid UTF-8: the readers replace invalid bytes by U+FFFD
	// (Stats.InvalidUTF8), so that consumers need not check it again.
	Text   string
	Source string // the file it came from, as named to ReadDocs; "file.zip:member" for a zip member
	Line   int    // its line in Source (a Parquet file: its row), from 1; 0 for a whole-file document
	// Offset is the byte offset of its line in Source when Line is 0 for a line: a
	// line of a byte range read from the middle of a file (ReadRanges), whose number
	// is not known. 0 otherwise.
	Offset int64
	// Range is the index, in the files or ranges ReadDocs or ReadRanges was given,
	// of the one the document came from.
	Range int
	// Stripe is, for a document of a striped range (FileRange.IsStriped), the stripe
	// of the uncompressed stream its line starts in; 0 otherwise.
	Stripe int64
}

// ReadOptions configure ReadDocs.
type ReadOptions struct {
	// TextKey is the JSONL member (or Parquet column) holding the text; empty means
	// DefaultTextKey. A Parquet column nested in a group is named by its dotted path.
	TextKey string
	// Progress, if set, is called now and then with the bytes read from the files
	// (compressed, as stored: their sizes add up to the total) and the documents
	// handed on since its previous call, so that it can be a progress bar's Add. It
	// is called from the goroutine that called ReadDocs.
	Progress func(bytesRead, docs int64)
	// SkipProgress, if set, is called instead of Progress with the bytes read while
	// skipping the SkipDocs documents (an earlier run's work, which a progress bar
	// counts in its total but not in its speed); nil: Progress counts them.
	SkipProgress func(bytesRead int64)
	// FilterSet, if set, keeps only the records of that Pile subset: those whose
	// meta.pile_set_name is FilterSet (such as "Enron Emails"). The others are
	// counted in Stats.Filtered, and those of them without a set name (no meta
	// object, or no string pile_set_name in it) in Stats.NoMeta too. A Parquet file
	// must have a meta.pile_set_name column; .txt and .zip files, which have no
	// metadata, are an error.
	FilterSet string
	// OnError says what to do with a bad record (see BadRecordReport): Skip, the
	// default, counts it and goes on; Fail stops with a *FileError.
	OnError ErrorPolicy
	// SkipDocs skips the first SkipDocs documents that would be handed on (after
	// filtering and dropping empty ones), to resume a run that handed them on
	// before: they are parsed, to be counted (in Stats.Skipped), but their text is
	// not decoded or copied.
	SkipDocs int64
	// MaxBadExamples is how many examples of each reason Stats.BadRecords keeps: 0
	// means DefaultBadExamples; a negative number keeps none.
	MaxBadExamples int
	// AcceptTruncated keeps what precedes the damage of a truncated or corrupt
	// compressed stream (a .jsonl.zst cut short, a zip member that fails its CRC, a
	// broken Parquet page) and skips the rest of it, counting it in Stats.Truncated
	// and Stats.UnreadBytes. Without it such a file is an error, whatever OnError
	// says: a stream cut short is no bad record, it hides an unknown number of them.
	AcceptTruncated bool
	// TextPool, if set, makes ReadBatches and ReadRangeBatches decode the JSONL texts
	// of each batch into arrays of the pool's, which the caller hands back with
	// TextPool.Release once done with a batch's texts. Other readers ignore it.
	TextPool *TextPool

	// Set by ReadRangeBatchesParallel for a piece it cut from a numbered range
	// (cutRanges): the piece's lines are numbered from its first line, which is not
	// the file's first (the caller adds the lines before), and counted in lines.
	relativeLines bool
	lines         *int64
	// The file as cutRanges found it: a piece whose file is no longer the same (size,
	// modification time, identity) is an error, not fewer lines.
	pieceOf os.FileInfo
}

// Stats count what ReadDocs read. Every record (JSONL line, Parquet row, zip member
// or text file) met is counted once, in Docs, Empty, Skipped, Filtered or Bad.
type Stats struct {
	Files       int   // files read to their end (or whose corrupt rest was skipped)
	Docs        int64 // documents handed on
	Empty       int64 // documents dropped because their text is empty
	Skipped     int64 // documents not handed on because of ReadOptions.SkipDocs
	Filtered    int64 // records dropped by ReadOptions.FilterSet
	NoMeta      int64 // of those, the records without a set name
	Bad         int64 // bad records dropped (OnError Skip); see BadRecords
	InvalidUTF8 int64 // documents handed on whose invalid UTF-8 became U+FFFD
	Bytes       int64 // bytes of the files gone through (compressed, as stored)
	TextBytes   int64 // bytes of text handed on
	// Truncated counts the truncated or corrupt streams (files, zip members,
	// Parquet row groups) whose rest was skipped (ReadOptions.AcceptTruncated), and
	// UnreadBytes the bytes of the files (as stored) that were not read because of
	// them: for a file cut short that is what follows the damage in the file, not
	// what is missing from it, which nobody knows.
	Truncated   int64
	UnreadBytes int64

	// BadRecords has the counts by reason and the first examples of the bad
	// records, and of the documents with invalid UTF-8; nil when there are none.
	BadRecords *BadRecordReport
}

// Records returns the number of records met: Docs + Empty + Skipped + Filtered +
// Bad.
func (s Stats) Records() int64 {
	return s.Docs + s.Empty + s.Skipped + s.Filtered + s.Bad
}

// ErrorRate returns the share of the records met that were bad, Bad / Records(), or
// 0 when there were none: what a --max-error-rate checks. Records of other subsets,
// empty and skipped documents count as good: a bad record is a fault of the input,
// whatever part of it a run keeps (with neither FilterSet nor SkipDocs nor empty
// texts, it is Bad / (Docs + Bad)).
func (s Stats) ErrorRate() float64 {
	if n := s.Records(); n > 0 {
		return float64(s.Bad) / float64(n)
	}
	return 0
}

// ReadDocs reads the documents of files, in order, and hands each to fn, as GPT-NeoX's
// lm_dataformat reads a corpus:
//
//   - .jsonl: one JSON object per line; its TextKey member is the text, a string or
//     a list of strings joined with ListSeparator. Blank lines are skipped.
//   - .txt: the whole file is one document.
//   - .jsonl.zst, .jsonl.gz, .json.gz (JSONL, as C4 names it), .txt.zst, .txt.gz:
//     the same, compressed. zstd windows up to 512 MiB (zstd --long=29) are fine.
//   - .zip: each member (directories aside) is one document, in archive order;
//     Doc.Source is "file.zip:member".
//   - .parquet: each row is one document, its text the TextKey column (string,
//     large_string or binary); Doc.Line is the row, from 1. The file is read a
//     page at a time, never whole.
//
// Documents with empty text are dropped (and counted in Stats.Empty). Lines may be of
// any length. ReadDocs checks that every file exists and has a known format (and
// that every Parquet file has the text column) before reading any.
//
// Bad records (see BadRecordReport) are skipped and counted, or, with OnError Fail,
// stop the reading with a *FileError that says where and what to do. A truncated or
// corrupt compressed stream is no bad record: it stops the reading with a *FileError
// naming the file and the offsets, unless AcceptTruncated. Text with
// invalid UTF-8 is not bad: it is handed on with each invalid byte replaced by
// U+FFFD, as encoding/json and tokenizers do, and counted in Stats.InvalidUTF8. A
// file that cannot be read at all (missing, of another format, a zip or Parquet
// file whose index is broken) is always an error, a *FileError.
//
// ReadDocs stops at the first error: fn's error is returned as it is. What it hands
// on, and in what order, depends only on the files and opt.
func ReadDocs(ctx context.Context, files []string, opt ReadOptions, fn func(Doc) error) (Stats, error) {
	return ReadRanges(ctx, wholeFiles(files), opt, fn)
}

// ReadRanges is ReadDocs over parts of files (see FileRange): a whole file is read as
// ReadDocs reads it; a byte range of an uncompressed JSONL file hands on the documents
// of the lines that start in it; a striped range of a JSONL file, compressed or not
// (see Striped), those of the lines that start in its stripes, each Doc saying its
// stripe. Ranges that tile a file hand on, together and in order, exactly the
// documents ReadDocs hands on for the whole file; so do the k striped ranges of a
// file, taken stripe by stripe. Stats.Files counts the ranges read to their end; a
// striped range counts all of its file's bytes (it reads them), and only the records
// of its stripes.
func ReadRanges(ctx context.Context, ranges []FileRange, opt ReadOptions, fn func(Doc) error) (Stats, error) {
	return readRanges(newDocReader(ctx, opt, fn), ranges, opt)
}

func readRanges(r *docReader, ranges []FileRange, opt ReadOptions) (Stats, error) {
	ctx := r.ctx
	files := make([]string, len(ranges))
	for i, rg := range ranges {
		files[i] = rg.File
	}
	formats, err := checkFiles(files, r.key, opt.FilterSet != "")
	if err != nil {
		return Stats{}, err
	}
	for i, rg := range ranges {
		if err := rg.check(formats[i]); err != nil {
			return Stats{}, err
		}
	}
	for i, rg := range ranges {
		if err := ctx.Err(); err != nil {
			return r.stats, err
		}
		r.rangeIdx, r.stripe = i, 0
		if err := r.readFile(rg, formats[i]); err != nil {
			return r.stats, err
		}
		r.stats.Files++
	}
	return r.stats, nil
}

// Batches: ReadBatches closes a batch at batchBytes of text or at maxBatchDocs
// documents.
const maxBatchDocs = 8192

// ReadBatches is ReadDocs handing fn runs of consecutive documents: a batch closes
// once it holds batchBytes of text or 8192 documents, and the last one may be
// smaller. Each batch is a new slice, which fn may keep. The texts of JSONL lines lie
// back to back in arrays of 256 KiB (textArena): a text kept keeps its array. On an
// error in a file, the documents before it still reach fn. Batches depend only on the
// documents, so they are the same on every run (with SkipDocs, they start at the first
// document handed on).
func ReadBatches(ctx context.Context, files []string, opt ReadOptions, batchBytes int, fn func([]Doc) error) (Stats, error) {
	return ReadRangeBatches(ctx, wholeFiles(files), opt, batchBytes, fn)
}

// ReadRangeBatches is ReadBatches over parts of files, as ReadRanges reads them.
func ReadRangeBatches(ctx context.Context, ranges []FileRange, opt ReadOptions, batchBytes int, fn func([]Doc) error) (Stats, error) {
	var (
		batch []Doc
		size  int
		fnErr error
		last  int // the previous batch's length: the next one's capacity
	)
	arena := &textArena{pool: opt.TextPool}
	send := func() error {
		b := batch
		batch, size, last = nil, 0, len(b)
		if arena.pool != nil {
			arena.pool.hold(b, arena.batch())
		}
		fnErr = fn(b)
		return fnErr
	}
	r := newDocReader(ctx, opt, func(d Doc) error {
		if batch == nil {
			batch = make([]Doc, 0, max(last, 16))
		}
		batch = append(batch, d)
		if size += len(d.Text); size >= batchBytes || len(batch) >= maxBatchDocs {
			return send()
		}
		return nil
	})
	r.arena = arena
	stats, err := readRanges(r, ranges, opt)
	if len(batch) > 0 && fnErr == nil && ctx.Err() == nil {
		if serr := send(); serr != nil {
			return stats, serr
		}
	}
	return stats, err
}

// TotalBytes returns the sum of the sizes of files, the total of ReadOptions.Progress.
func TotalBytes(files []string) (int64, error) {
	var total int64
	for _, name := range files {
		fi, err := os.Stat(name)
		if err != nil {
			return 0, fmt.Errorf("prep: %w", err)
		}
		total += fi.Size()
	}
	return total, nil
}
