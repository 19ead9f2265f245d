package pipelines

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"gptkit/internal/hugemem"
	"gptkit/prep"
	"gptkit/tokenize"
)

// Memory: the pipeline holds at most 2×workers+2 batches of text and their ids (4 bytes
// per id, about the size of the text for English with GPT-2; see batchEncoder). A batch is
// 1 MB of text, less with many workers, so that all of them together stay near
// inFlightText whatever the input size. (With 4 MB batches one of two workers sat idle
// through the last batch: 88% of tokenizer-only speed against 93% with 1 MB,
// BenchmarkEndToEndVsTokenizer.) Peak RSS of a whole run over 512 MB of JSONL
// (BenchmarkTokenizeRunPeakRSS, GPT-2, 2 cores): 99 MiB with 2 workers; with 4 MB
// batches it was 190 MiB with 2 workers, 460 MiB with 16, 320 MiB with 32, 410 MiB with 64.
// Batch sizes do not change the output. A part that reads stripes of a shared file
// queues one stripe more (stripeAhead: 64 MiB of text with the default stripes). Each
// file reader (fileReaders: a reader per four workers, each reading a file, or a piece
// of an uncompressed one) holds up to prep's parallelAhead+2 batches more: at 64
// workers, 16 readers, ~100 MB of text beyond inFlightText, and 16 decoders (a zstd
// window each: 8 MB by default).
const (
	maxBatchBytes = 1 << 20
	minBatchBytes = 256 << 10
	inFlightText  = 128 << 20
)

// batchBytes is how much text one encoding job holds with workers encoding.
func batchBytes(workers int) int {
	return min(maxBatchBytes, max(minBatchBytes, inFlightText/(2*workers+2)))
}

// fileReaders is how many readers encodeSplit has read at once
// (prep.ReadRangeBatchesParallel: files, and pieces of uncompressed .jsonl files): one
// reader, decompressing and parsing on one core (~800 MB/s of .jsonl.zst), keeps about
// five tokenizers busy (~155 MB/s each on the mixed corpus), so a reader per four workers.
func fileReaders(workers int) int { return max(1, workers/4) }

// maxStripeAhead caps the text queued ahead for stripes (see stripeAhead).
const maxStripeAhead = 256 << 20

// stripeAhead is how many batches more than usual the reader may queue when it reads
// stripes of a file it shares with others: one stripe's worth (at most maxStripeAhead
// of text). Between two of its stripes the reader decompresses the others' without
// handing anything on; with the usual queue (a few MB) the tokenizers would finish it
// early and wait; with a stripe queued they work through it while the reader skips.
func stripeAhead(inputs []prep.FileRange, workers int) int {
	var stripe int64
	for _, rg := range inputs {
		if rg.IsStriped() && rg.StripeMod > 1 {
			stripe = max(stripe, min(rg.StripeBytes, maxStripeAhead))
		}
	}
	bb := int64(batchBytes(workers))
	return int((stripe + bb - 1) / bb)
}

// encodeSplit reads split's inputs, encodes them on workers goroutines and writes the ids
// in input order through rot, skipping the first skip documents (those already in the
// shards a resumed run keeps: the reader parses them but hands them on no more).
//
// The reader queues batches in order; workers encode them; the writer takes the results
// in the same order. At most 2×workers batches (see batchBytes) are queued, one more is
// being read and one written; with several inputs and many workers, fileReaders of
// them are read at once, each up to a few batches ahead.
func (r *TokenizeRun) encodeSplit(ctx context.Context, inputs []prep.FileRange, skip int64, workers int, rot *shardRotator) (read prep.Stats, tokens int64, writeTime time.Duration, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rot.ctx = ctx
	type result struct {
		docs []docIDs // nil if the batch failed
		ids  []int32  // the array they share, for the next batches once written
	}
	type job struct {
		docs   []prep.Doc
		result chan result
	}
	ahead := stripeAhead(inputs, workers)
	// Arrays of ids the writer is done with go back to the workers: a fresh array per
	// batch was cleared by the allocator and faulted in page by page.
	freeIDs := make(chan []int32, 2*workers+ahead)
	// So do the arrays of the texts, once encoded (the writer needs their lengths only).
	texts := new(prep.TextPool)
	opt := r.readOptions(skip)
	opt.TextPool = texts
	jobs := make(chan job, workers+ahead)
	order := make(chan job, 2*workers+ahead)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var enc batchEncoder
			for j := range jobs {
				select {
				case enc.spare = <-freeIDs:
				default:
				}
				out, err := enc.encode(r, j.docs)
				texts.Release(j.docs)
				if err != nil {
					cancel(err) // out is nil: tells the writer the batch failed
				}
				j.result <- result{out, enc.buf}
				enc.spare = nil
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		var err error
		read, err = prep.ReadRangeBatchesParallel(ctx, inputs, opt, batchBytes(workers), fileReaders(workers), func(docs []prep.Doc) error {
			j := job{docs: docs, result: make(chan result, 1)}
			select {
			case order <- j:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			return nil
		})
		if err == nil && read.Skipped < skip {
			err = fmt.Errorf("the inputs hold %d documents, the journaled shards %d (were they changed in place, keeping size and mtime?): delete %s to start over",
				read.Skipped, skip, JournalName)
		}
		readErr <- err
	}()

	writeErr := func() error {
		for j := range order {
			var res result
			select {
			case res = <-j.result:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			out := res.docs
			if out == nil { // the worker stopped on an error
				return context.Cause(ctx)
			}
			t0 := time.Now()
			batch := int64(0)
			for i, ids := range out {
				if err := rot.add(ids, len(j.docs[i].Text), rot.stripeOf(j.docs[i])); err != nil {
					return err
				}
				batch += int64(ids.len())
				r.event("doc")
			}
			tokens += batch
			if r.ProgressTokens != nil {
				r.ProgressTokens(batch)
			}
			select {
			case freeIDs <- res.ids[:0]:
			default:
			}
			writeTime += time.Since(t0)
		}
		return nil
	}()
	if writeErr != nil {
		cancel(writeErr)
	}
	wg.Wait()
	err = <-readErr
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	} else if writeErr != nil {
		err = writeErr
	}
	if err == nil {
		t0 := time.Now()
		err = rot.finish()
		writeTime += time.Since(t0)
	}
	if err != nil {
		rot.abort()
	}
	return read, tokens, writeTime, err
}

// docIDs are the ids of one document as int32 (half the memory of int; every id fits),
// in one part, or in several for a document longer than hugeDocBytes.
type docIDs [][]int32

func (d docIDs) len() int {
	n := 0
	for _, p := range d {
		n += len(p)
	}
	return n
}

// A document of more than hugeDocBytes of text is encoded in parts of about
// hugePartBytes (Tokenizer.Cut), each part's ids in an array of its own of the exact
// size: a 100 MB document (enwik8) needs no 400 MB array grown by doubling, and its
// peak memory is its text and its ids, ~2.7 bytes per byte of text with GPT-2
// (TestRunPeakRSSOneHugeDocument in cmd/tokenize).
const (
	hugeDocBytes  = 8 << 20
	hugePartBytes = 1 << 20
)

// batchEncoder encodes batches for one worker. A batch's ids go into one array that the
// documents' slices share: one allocation per batch instead of several per document (the
// tokenizer's appends growing each document's slice, and appending the EOD id often
// copying it once more), and arrays the writer is done with are used again. Against
// encoding each document on its own, this took the pipeline's CPU time per byte from
// 81-85% of the tokenizer's alone to 90-92% (BenchmarkEndToEndVsTokenizer, e2e_cpu_pct,
// GPT-2, 2 cores).
//
// A fresh array has room for one id per byte of the batch's text and two per document
// (idBound), which byte-level BPE and byte and character vocabularies never exceed, and
// its pages are left unwritten (hugemem.MakeUnwritten): only the part the ids reach is
// ever faulted in. Sized instead from the tokens per byte of the worker's last batch
// (with 5% or 25% to spare), arrays of the mixed corpus's batches, whose density varies,
// were too small to be used again or outgrew their estimate (append copying them) often
// enough that 100 MB of it took 74 MB of fresh arrays and 10 MB of copies, each page
// cleared by the kernel; with the bound, 6 arrays served that run.
type batchEncoder struct {
	tokensPerByte float64 // of the previous batch; 0 before the first
	part          []int32 // scratch for the parts of a huge document
	spare         []int32 // an array of a written batch to encode the next into, if big enough
	buf           []int32 // the array the last batch's ids share (nil after an error)
}

// idBound is the room a fresh array of ids has for a batch of text bytes in docs
// documents: one id per byte and two per document (an EOD id, and a prefix space some
// tokenizers add). A normalizer that lengthens text could exceed it, and append then
// grows the array: the bound sizes arrays, it does not guard them.
func idBound(text, docs int) int { return text + 2*docs + 64 }

func (e *batchEncoder) encode(r *TokenizeRun, docs []prep.Doc) ([]docIDs, error) {
	tok := r.Tokenizer
	// Only a character vocabulary can lack a character: it is checked.
	checked := tok.Kind() == tokenize.KindChar
	text := 0
	for _, d := range docs {
		if len(d.Text) <= hugeDocBytes {
			text += len(d.Text)
		}
	}
	ratio := e.tokensPerByte
	if ratio == 0 {
		ratio = 0.3 // GPT-2 on English: ~4 bytes per token
	}
	e.buf = nil
	need := min(int(float64(text)*ratio*1.05)+len(docs)+64, idBound(text, len(docs)))
	buf := e.spare[:0]
	if cap(buf) < need {
		buf = hugemem.MakeUnwritten[int32](idBound(text, len(docs)))[:0]
	}
	out := make([]docIDs, len(docs))
	parts := make([][]int32, len(docs)) // out's one-part documents, one allocation
	for i, d := range docs {
		if len(d.Text) > hugeDocBytes {
			ids, err := e.encodeHuge(r, d)
			if err != nil {
				return nil, err
			}
			out[i] = ids
			continue
		}
		start := len(buf)
		var err error
		// prep hands on valid UTF-8 only (Doc.Text): the tokenizer need not check it.
		if buf, err = tok.AppendEncodeValidInt32(buf, d.Text, checked); err != nil {
			return nil, fmt.Errorf("%s: %w", docWhere(d), err)
		}
		if r.AppendEOD {
			buf = append(buf, int32(tok.EOD()))
		}
		// A document's slice ends where the next begins (a regrown buf leaves the
		// earlier ones in the old array, which they keep alive).
		parts[i] = buf[start:len(buf):len(buf)]
		out[i] = parts[i : i+1 : i+1]
	}
	if text > 0 {
		e.tokensPerByte = float64(len(buf)) / float64(text)
	}
	e.buf = buf
	return out, nil
}

// encodeHuge encodes a document longer than hugeDocBytes in parts.
func (e *batchEncoder) encodeHuge(r *TokenizeRun, d prep.Doc) (docIDs, error) {
	tok := r.Tokenizer
	checked := tok.Kind() == tokenize.KindChar
	var ids docIDs
	for start := 0; start < len(d.Text); {
		end := len(d.Text)
		if checked {
			// One part: the error offset of a character vocabulary is one in the text.
		} else if p := tok.Cut(d.Text, start+hugePartBytes, len(d.Text)); p > 0 {
			end = p
		}
		var err error
		if e.part, err = tok.AppendEncodeInt32(e.part[:0], d.Text[start:end], checked); err != nil {
			return nil, fmt.Errorf("%s: %w", docWhere(d), err)
		}
		if end == len(d.Text) && r.AppendEOD {
			e.part = append(e.part, int32(tok.EOD()))
		}
		ids = append(ids, slices.Clone(e.part))
		start = end
	}
	if cap(e.part) > 4*hugePartBytes {
		e.part = nil // do not keep a huge part's scratch
	}
	return ids, nil
}

// readOptions are the reader's options, skipping the first skip documents.
func (r *TokenizeRun) readOptions(skip int64) prep.ReadOptions {
	opt := prep.ReadOptions{TextKey: r.TextKey, Progress: r.Progress, SkipProgress: r.ProgressSkipped, FilterSet: r.FilterSet, OnError: prep.Fail, SkipDocs: skip,
		AcceptTruncated: r.AcceptTruncated}
	if r.SkipBad {
		opt.OnError = prep.Skip
	}
	return opt
}

func docWhere(d prep.Doc) string { return prep.Where(d.Source, d.Line, d.Offset) }

// wholeRanges reads every file whole.
func wholeRanges(files []string) []prep.FileRange {
	out := make([]prep.FileRange, len(files))
	for i, f := range files {
		out[i] = prep.Whole(f)
	}
	return out
}
