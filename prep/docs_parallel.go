package prep

import (
	"context"
	"sync"
	"sync/atomic"
)

// parallelAhead is how many batches each reader of ReadRangeBatchesParallel may hold
// ready beyond the one fn is working on.
const parallelAhead = 4

// ReadRangeBatchesParallel is ReadRangeBatches with up to readers of the ranges read at
// once, each on a goroutine of its own, ahead of fn: one reader (decompression and
// JSON on one core) keeps only a few tokenizers busy, so a many-core run over many
// files reads several of them at a time. fn gets the same documents in the same order
// (batches are cut per range: a batch never spans two ranges), on the caller's
// goroutine, and so does opt.Progress; the Stats and the error are those
// ReadRangeBatches returns, the error reaching fn's caller only once every document
// before it has been handed on (but after an error of fn's own, the Stats count only
// the ranges finished before it). Every range is checked before any is read.
//
// The documents that opt.SkipDocs skips are read one range after another, as
// ReadRangeBatches reads them; the ranges after them in parallel. Memory: each reader
// holds up to parallelAhead batches ahead, and its own decoder (a zstd window, 8 MB
// by default).
func ReadRangeBatchesParallel(ctx context.Context, ranges []FileRange, opt ReadOptions, batchBytes, readers int, fn func([]Doc) error) (Stats, error) {
	if readers <= 1 || len(ranges) <= 1 {
		return ReadRangeBatches(ctx, ranges, opt, batchBytes, fn)
	}
	if err := checkRanges(ranges, opt); err != nil {
		return Stats{}, err
	}
	var wg sync.WaitGroup
	defer wg.Wait() // (after cancel, deferred next) the readers return at their next document
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var total Stats
	first := 0
	for skip := max(opt.SkipDocs, 0); first < len(ranges) && skip > 0; first++ {
		o := opt
		o.SkipDocs = skip
		st, err := readOneRange(ctx, ranges, first, o, batchBytes, fn)
		total.add(st)
		if err != nil {
			return total, err
		}
		skip -= st.Skipped
	}

	var window []*rangeAhead
	next := first
	start := func() {
		a := &rangeAhead{batches: make(chan []Doc, parallelAhead)}
		o := opt
		o.SkipDocs = 0
		o.Progress = func(bytesRead, docs int64) { a.bytes.Add(bytesRead); a.docs.Add(docs) }
		k := next
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(a.batches)
			a.stats, a.err = readOneRange(ctx, ranges, k, o, batchBytes, func(b []Doc) error {
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
	for next < len(ranges) && len(window) < readers {
		start()
	}
	for len(window) > 0 {
		a := window[0]
		for b := range a.batches {
			progress()
			if err := fn(b); err != nil {
				cancel(err)
				return total, err
			}
		}
		progress() // a's last (its reader has returned)
		total.add(a.stats)
		if a.err != nil {
			cancel(a.err)
			return total, a.err
		}
		window = window[1:]
		if next < len(ranges) {
			start()
		}
	}
	return total, nil
}

// rangeAhead is one range being read ahead by ReadRangeBatchesParallel.
type rangeAhead struct {
	batches     chan []Doc // closed when the reader returns
	stats       Stats      // the reader's, once batches is closed
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

// readOneRange is ReadRangeBatches of ranges[k] alone, its documents numbered as
// ranges' (Doc.Range k).
func readOneRange(ctx context.Context, ranges []FileRange, k int, opt ReadOptions, batchBytes int, fn func([]Doc) error) (Stats, error) {
	return ReadRangeBatches(ctx, ranges[k:k+1], opt, batchBytes, func(b []Doc) error {
		for i := range b {
			b[i].Range = k
		}
		return fn(b)
	})
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
