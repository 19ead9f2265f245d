package prep

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
)

// DefaultTextKey is the JSONL member holding the text unless ReadOptions say otherwise.
const DefaultTextKey = "text"

// Doc is one document of a corpus.
type Doc struct {
	Text   string
	Source string // the file it came from, as named to ReadDocs
	Line   int    // its line in Source, from 1; 0 for a whole-file document (.txt)
}

// ReadOptions configure ReadDocs.
type ReadOptions struct {
	// TextKey is the JSONL member holding the text; empty means DefaultTextKey.
	TextKey string
	// Progress, if set, is called now and then with the bytes read from the files
	// (compressed, as stored: their sizes add up to the total) and the documents
	// handed on since its previous call, so that it can be a progress bar's Add. It
	// is called from the goroutine that called ReadDocs.
	Progress func(bytesRead, docs int64)
}

// Stats count what ReadDocs read.
type Stats struct {
	Files     int   // files read to their end
	Docs      int64 // documents handed on
	Empty     int64 // documents dropped because their text is empty
	Bytes     int64 // bytes read from the files (compressed, as stored)
	TextBytes int64 // bytes of text handed on
}

// ReadDocs reads the documents of files, in order, and hands each to fn, as GPT-NeoX's
// lm_dataformat reads a corpus:
//
//   - .jsonl: one JSON object per line; its TextKey member is the text, a string or
//     a list of strings joined with ListSeparator. Blank lines are skipped.
//   - .txt: the whole file is one document.
//   - .jsonl.zst, .jsonl.gz, .json.gz (JSONL, as C4 names it), .txt.zst, .txt.gz:
//     the same, compressed. zstd windows up to 512 MiB (zstd --long=29) are fine.
//
// Documents with empty text are dropped (and counted in Stats.Empty). Lines may be of
// any length. ReadDocs checks that every file exists and has a known format before
// reading any. It stops at the first error: fn's error is returned as it is; a
// problem with a file is a *FileError that says where and what to do.
func ReadDocs(ctx context.Context, files []string, opt ReadOptions, fn func(Doc) error) (Stats, error) {
	formats, err := checkFiles(files)
	if err != nil {
		return Stats{}, err
	}
	r := &docReader{ctx: ctx, key: opt.TextKey, progress: opt.Progress, fn: fn}
	if r.key == "" {
		r.key = DefaultTextKey
	}
	for i, name := range files {
		if err := ctx.Err(); err != nil {
			return r.stats, err
		}
		if err := r.readFile(name, formats[i]); err != nil {
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
// smaller. Each batch is a new slice, which fn may keep. On an error in a file, the
// documents before it still reach fn.
func ReadBatches(ctx context.Context, files []string, opt ReadOptions, batchBytes int, fn func([]Doc) error) (Stats, error) {
	var (
		batch []Doc
		size  int
		fnErr error
	)
	send := func() error {
		b := batch
		batch, size = nil, 0
		fnErr = fn(b)
		return fnErr
	}
	stats, err := ReadDocs(ctx, files, opt, func(d Doc) error {
		batch = append(batch, d)
		if size += len(d.Text); size >= batchBytes || len(batch) >= maxBatchDocs {
			return send()
		}
		return nil
	})
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

// docReader is the state of one ReadDocs.
type docReader struct {
	ctx      context.Context
	key      string
	progress func(bytesRead, docs int64)
	fn       func(Doc) error
	stats    Stats

	// Progress not yet reported.
	counter     *countingReader // the current file's
	docsPending int64
	textPending int
}

// emit hands d to fn, or counts it as empty.
func (r *docReader) emit(d Doc) error {
	if d.Text == "" {
		r.stats.Empty++
		return nil
	}
	r.stats.Docs++
	r.stats.TextBytes += int64(len(d.Text))
	if err := r.fn(d); err != nil {
		return err
	}
	if r.progress != nil {
		r.docsPending++
		if r.textPending += len(d.Text); r.docsPending >= 256 || r.textPending >= 1<<20 {
			r.reportProgress()
		}
	}
	return nil
}

// reportProgress calls progress with what it has not been told yet.
func (r *docReader) reportProgress() {
	if r.progress == nil {
		return
	}
	var bytes int64
	if r.counter != nil {
		bytes = r.counter.take()
	}
	if bytes != 0 || r.docsPending != 0 {
		r.progress(bytes, r.docsPending)
	}
	r.docsPending, r.textPending = 0, 0
}

// countingReader counts the bytes read through it; a zstd decoder reads in a
// goroutine of its own.
type countingReader struct {
	f        *os.File
	n        atomic.Int64 // bytes read
	reported int64        // bytes taken by take
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// take returns the bytes read since its previous call.
func (c *countingReader) take() int64 {
	n := c.n.Load()
	d := n - c.reported
	c.reported = n
	return d
}
