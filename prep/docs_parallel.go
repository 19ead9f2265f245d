package prep

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
)

// parallelAhead is how many batches each reader of ReadRangeBatchesParallel may hold
// ready beyond the one fn is working on.
const parallelAhead = 4

// pieceBatches is the size of the pieces ReadRangeBatchesParallel cuts an uncompressed
// .jsonl range into, in batches (batchBytes of file bytes each): a reader must be able
// to read its whole piece ahead (parallelAhead batches, and one waiting to be handed
// on) before fn gets to it, or it waits there and the next pieces are read no sooner.
const pieceBatches = parallelAhead

// minPieceBytes is the smallest piece: each costs an open, a stat and a map of its file.
// (A variable for the tests.)
var minPieceBytes int64 = 1 << 20

// ReadRangeBatchesParallel is ReadRangeBatches with up to readers pieces of the ranges
// read at once, each on a goroutine of its own, ahead of fn: one reader (decompression
// and JSON on one core) keeps only a few tokenizers busy. fn gets the same documents in
// the same order (batches are cut per piece: a batch never spans two), on the caller's
// goroutine, and so does opt.Progress; the Stats and the error are those
// ReadRangeBatches returns, line numbers included, the error reaching fn's caller only
// once every document before it has been handed on (but after an error of fn's own,
// the Stats count only the pieces finished before it). Every range is checked before
// any is read.
//
// The pieces: an uncompressed .jsonl range (a whole file, or a byte range of one) is
// cut into byte ranges of pieceBatches×batchBytes (at least minPieceBytes), which
// several readers read at once (each piece's lines are numbered from its first; the
// lines of the pieces before it are added as fn gets them; a piece whose file changed
// since the cut is an error). With opt.AcceptTruncated nothing is cut (a piece that
// fails to read would skip only the rest of itself). Any other range is one piece,
// read by one reader: a compressed stream is decoded from its start, so a reader ahead
// holds parallelAhead batches of its file and then waits for fn to reach it, and
// several compressed files are read about as fast as one (BenchmarkReadParallel), with
// the start of the next ones ready.
//
// The documents that opt.SkipDocs skips are read one piece after another, as
// ReadRangeBatches reads them; the pieces after them in parallel. Memory: each reader
// holds up to parallelAhead batches ahead, and its own decoder (a zstd window, 8 MB
// by default).
func ReadRangeBatchesParallel(ctx context.Context, ranges []FileRange, opt ReadOptions, batchBytes, readers int, fn func([]Doc) error) (Stats, error) {
	if readers <= 1 || len(ranges) == 0 {
		return ReadRangeBatches(ctx, ranges, opt, batchBytes, fn)
	}
	if err := checkRanges(ranges, opt); err != nil {
		return Stats{}, err
	}
	var pieces []rangePiece
	if opt.AcceptTruncated {
		// A piece that fails to read would skip only the rest of itself, where
		// AcceptTruncated skips the rest of the file: no pieces.
		for k, rg := range ranges {
			pieces = append(pieces, rangePiece{FileRange: rg, k: k, first: true, last: true})
		}
	} else {
		var err error
		if pieces, err = cutRanges(ranges, max(int64(pieceBatches)*int64(batchBytes), minPieceBytes)); err != nil {
			return Stats{}, err
		}
	}
	if len(pieces) <= 1 {
		return ReadRangeBatches(ctx, ranges, opt, batchBytes, fn)
	}
	var wg sync.WaitGroup
	defer wg.Wait() // (after cancel, deferred next) the readers return at their next document
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var total Stats
	var lines lineBase
	first := 0
	for skip := max(opt.SkipDocs, 0); first < len(pieces) && skip > 0; first++ {
		pc := pieces[first]
		o := opt
		o.SkipDocs = skip
		var n int64
		var fnErr error
		st, err := readPiece(ctx, pc, o, batchBytes, &n, func(b []Doc) error {
			fnErr = fn(lines.shift(pc, b))
			return fnErr
		})
		if fnErr != nil {
			// fn's own error, as it is (its lines, if it names any, are the file's).
			st, _ = lines.done(pc, st, n, nil)
			total.add(st)
			return total, fnErr
		}
		st, err = lines.done(pc, st, n, err)
		total.add(st)
		if err != nil {
			return total, err
		}
		skip -= st.Skipped
	}

	var window []*rangeAhead
	next := first
	start := func() {
		a := &rangeAhead{piece: pieces[next], batches: make(chan []Doc, parallelAhead)}
		o := opt
		o.SkipDocs = 0
		o.Progress = func(bytesRead, docs int64) { a.bytes.Add(bytesRead); a.docs.Add(docs) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(a.batches)
			a.stats, a.err = readPiece(ctx, a.piece, o, batchBytes, &a.lines, func(b []Doc) error {
				select {
				case a.batches <- b:
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			})
		}()
		window = append(window, a)
		next++
	}
	progress := func() {
		if opt.Progress == nil {
			return
		}
		var bytesRead, docs int64
		for _, a := range window {
			bytesRead += a.bytes.Swap(0)
			docs += a.docs.Swap(0)
		}
		if bytesRead != 0 || docs != 0 {
			opt.Progress(bytesRead, docs)
		}
	}
	for next < len(pieces) && len(window) < readers {
		start()
	}
	for len(window) > 0 {
		a := window[0]
		for b := range a.batches {
			progress()
			if err := fn(lines.shift(a.piece, b)); err != nil {
				cancel(err)
				return total, err
			}
		}
		progress() // a's last (its reader has returned)
		st, err := lines.done(a.piece, a.stats, a.lines, a.err)
		total.add(st)
		if err != nil {
			cancel(err)
			return total, err
		}
		window = window[1:]
		if next < len(pieces) {
			start()
		}
	}
	return total, nil
}

// rangePiece is what one reader of ReadRangeBatchesParallel reads: ranges[k] whole,
// or a byte range of it.
type rangePiece struct {
	FileRange
	k           int
	first, last bool        // the range's first and last piece
	relative    bool        // lines numbered from the piece's first (lineBase adds those before)
	file        os.FileInfo // for a piece cut from a range: its file when cut
}

// cutRanges cuts the uncompressed .jsonl ranges of over two pieces' bytes into pieces
// of about size bytes; the other ranges are one piece each. Each piece checks, when it
// opens its file, that the file is the one cut (errChangedWhileRead).
func cutRanges(ranges []FileRange, size int64) ([]rangePiece, error) {
	var pieces []rangePiece
	for k, rg := range ranges {
		whole := rangePiece{FileRange: rg, k: k, first: true, last: true}
		if rg.IsStriped() || !Splittable(rg.File) {
			pieces = append(pieces, whole)
			continue
		}
		fi, err := os.Stat(rg.File)
		if err != nil {
			return nil, &FileError{File: rg.File, Err: err}
		}
		from, to := rg.Start, fi.Size()
		if !rg.IsWhole() {
			to = min(rg.End, to)
		}
		if to-from <= 2*size {
			pieces = append(pieces, whole)
			continue
		}
		// A range from the file's start numbers its lines: so do its pieces, from
		// their first, and lineBase adds the lines before.
		numbered := from == 0
		for at := from; at < to; at += size {
			end := min(at+size, to)
			if to-end < size/2 {
				end = to // no short last piece
			}
			pieces = append(pieces, rangePiece{FileRange: FileRange{File: rg.File, Start: at, End: end}, k: k,
				first: at == from, last: end == to, relative: numbered && at > 0, file: fi})
			if end == to {
				break
			}
		}
	}
	return pieces, nil
}

// readPiece is ReadRangeBatches of pc alone, its documents numbered as the caller's
// ranges' (Doc.Range), its lines counted in lines.
func readPiece(ctx context.Context, pc rangePiece, opt ReadOptions, batchBytes int, lines *int64, fn func([]Doc) error) (Stats, error) {
	opt.relativeLines, opt.lines, opt.pieceOf = pc.relative, lines, pc.file
	return ReadRangeBatches(ctx, []FileRange{pc.FileRange}, opt, batchBytes, func(b []Doc) error {
		for i := range b {
			b[i].Range = pc.k
		}
		return fn(b)
	})
}

// lineBase turns the line numbers of pieces read in order from relative to their
// piece's first line into the file's: it counts the lines of a range's pieces so far.
type lineBase struct{ before int64 }

// shift adds the lines before pc to the line numbers of its documents b.
func (lb *lineBase) shift(pc rangePiece, b []Doc) []Doc {
	if pc.relative && lb.before > 0 {
		for i := range b {
			if b[i].Line > 0 {
				b[i].Line += int(lb.before)
			}
		}
	}
	return b
}

// done takes the Stats, line count and error of pc, read: it adds the lines before pc
// to the lines that st's bad-record examples and err name, counts a range among
// Stats.Files once (at its last piece) and moves on past pc's lines.
func (lb *lineBase) done(pc rangePiece, st Stats, lines int64, err error) (Stats, error) {
	if pc.relative && lb.before > 0 {
		if st.BadRecords != nil {
			for i := range st.BadRecords.Examples {
				if e := &st.BadRecords.Examples[i]; e.Line > 0 {
					e.Line += int(lb.before)
				}
			}
		}
		var fe *FileError
		if errors.As(err, &fe) && fe.File == pc.File && fe.Line > 0 {
			fe.Line += int(lb.before)
		}
	}
	if !pc.last {
		st.Files = 0
	}
	if lb.before += lines; pc.last {
		lb.before = 0
	}
	return st, err
}

// rangeAhead is one piece being read ahead by ReadRangeBatchesParallel.
type rangeAhead struct {
	piece       rangePiece
	batches     chan []Doc // closed when the reader returns
	stats       Stats      // the reader's, once batches is closed
	lines       int64      // the lines it read, once batches is closed
	err         error
	bytes, docs atomic.Int64 // progress not yet reported
}

// checkRanges checks ranges as ReadRanges does before it reads any.
func checkRanges(ranges []FileRange, opt ReadOptions) error {
	key := opt.TextKey
	if key == "" {
		key = DefaultTextKey
	}
	files := make([]string, len(ranges))
	for i, rg := range ranges {
		files[i] = rg.File
	}
	formats, err := checkFiles(files, key, opt.FilterSet != "")
	if err != nil {
		return err
	}
	for i, rg := range ranges {
		if err := rg.check(formats[i]); err != nil {
			return err
		}
	}
	return nil
}

// add adds o's counts to s, and o's bad records to s's report (examples up to s's
// limit of each reason, o's after s's).
func (s *Stats) add(o Stats) {
	s.Files += o.Files
	s.Docs += o.Docs
	s.Empty += o.Empty
	s.Skipped += o.Skipped
	s.Filtered += o.Filtered
	s.NoMeta += o.NoMeta
	s.Bad += o.Bad
	s.InvalidUTF8 += o.InvalidUTF8
	s.Bytes += o.Bytes
	s.TextBytes += o.TextBytes
	s.Truncated += o.Truncated
	s.UnreadBytes += o.UnreadBytes
	if o.BadRecords == nil {
		return
	}
	if s.BadRecords == nil {
		s.BadRecords = &BadRecordReport{Counts: map[string]int64{}, max: o.BadRecords.max}
	}
	s.BadRecords.merge(o.BadRecords)
}

// MergeBadRecords returns a report of a's records and b's (either may be nil): their
// counts added, a's examples and then b's, up to the larger limit of examples of each
// reason of the two (DefaultBadExamples for a report read back from JSON, which has
// none). Neither is changed.
func MergeBadRecords(a, b *BadRecordReport) *BadRecordReport {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	limit := max(a.max, b.max)
	if limit == 0 {
		limit = DefaultBadExamples
	}
	m := &BadRecordReport{Counts: map[string]int64{}, max: limit}
	m.merge(a)
	m.merge(b)
	return m
}

// merge adds o's counts and examples to r's (up to r's limit of examples of each
// reason).
func (r *BadRecordReport) merge(o *BadRecordReport) {
	for reason, n := range o.Counts {
		r.Counts[reason] += n
	}
	if r.shown == nil {
		r.shown = map[string]int{}
	}
	for _, e := range o.Examples {
		if r.shown[e.Reason] < r.max {
			r.shown[e.Reason]++
			r.Examples = append(r.Examples, e)
		}
	}
}
