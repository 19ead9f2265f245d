// Package pipelines composes the stages (prep's document readers, the tokenizer, shard
// writers, storage) into the jobs the commands run. Stages hand off through files; this
// package only wires them and keeps the order, the bounds on memory and the bookkeeping.
package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// TokenizeRun tokenizes documents into a shards dataset (`tokenize run`): the files' documents
// in input order, each followed by the end-of-document id, written as GPT-NeoX indexed
// datasets NAME_text_document{,_001,...}.{bin,idx} and, last, manifest.json.
type TokenizeRun struct {
	Inputs    []string            // JSONL (.jsonl, .jsonl.zst, .jsonl.gz) and .txt files, in order
	Store     storage.Store       // where the dataset goes
	Dir       string              // the dataset's directory within Store ("" = its root)
	Name      string              // dataset name: shards are NAME_text_document*
	Tokenizer *tokenize.Tokenizer // the tokenizer
	TokSpec   string              // how the tokenizer was named, for the manifest's provenance
	TextKey   string              // JSONL member holding the text ("" = "text")
	AppendEOD bool                // append the tokenizer's EOD id after every document
	Workers   int                 // encoding goroutines (0 = GOMAXPROCS)
	// ShardBytes starts a new shard once the current one's .bin holds this many bytes
	// (0 = one shard). Documents are never split.
	ShardBytes int64
	Overwrite  bool   // replace an existing dataset's manifest instead of refusing
	Command    string // the command line, for provenance
	Logger     *slog.Logger
	// Progress is called with input bytes read and documents encoded (see prep.ReadOptions).
	Progress func(bytesRead, docs int64)
}

// RunStats says what a run did and where its time went.
type RunStats struct {
	Docs, Empty, Tokens int64
	TextBytes           int64
	Shards              int
	Elapsed             time.Duration
	// WriteTime is the time spent in shard writers (encoding ids to bytes, writing,
	// committing), which the goal keeps under 5% of Elapsed.
	WriteTime time.Duration
}

// batchBytes is how much text one encoding job holds.
const batchBytes = 4 << 20

// Run runs the job and returns the manifest it wrote.
func (r *TokenizeRun) Run(ctx context.Context) (*shards.Manifest, RunStats, error) {
	start := time.Now()
	var stats RunStats
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok := r.Tokenizer
	if r.AppendEOD && tok.EOD() < 0 {
		return nil, stats, fmt.Errorf("tokenizer %s has no end-of-document token; pass --append-eod=false", tok.Name())
	}
	old, err := shards.ReadManifest(ctx, r.Store, r.Dir)
	switch {
	case err == nil && !r.Overwrite:
		return nil, stats, fmt.Errorf("%s already holds a dataset (manifest.json with %d documents); pass --overwrite to replace it or choose another --output", r.where(), old.Documents)
	case err != nil && !errors.Is(err, shards.ErrMissing):
		if !r.Overwrite {
			return nil, stats, err
		}
		old = nil // a broken manifest is replaced too
	}
	dtype := shards.DTypeForVocab(tok.VocabSize())
	src := shards.NewSource(r.Inputs, r.Command)
	src["tokenizer_spec"] = r.TokSpec
	src["append_eod"] = r.AppendEOD
	m := shards.NewManifest(shards.TokenizerInfo{Name: tok.Name(), Fingerprint: tok.Fingerprint(), VocabSize: tok.VocabSize(), EODID: tok.EOD()}, dtype, src)
	if old != nil {
		m.ETag = old.ETag
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// The reader queues batches in order; workers encode them; the writer takes the
	// results in the same order. At most 2×workers batches are in flight.
	type job struct {
		docs   []prep.Doc
		result chan [][]int
	}
	jobs := make(chan job, workers)
	order := make(chan job, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				out := make([][]int, len(j.docs))
				for i, d := range j.docs {
					ids, err := tok.EncodeChecked(d.Text)
					if err != nil {
						cancel(fmt.Errorf("%s: %w", docWhere(d), err))
						out = nil // tells the writer the batch failed
						break
					}
					if r.AppendEOD {
						ids = append(ids, tok.EOD())
					}
					out[i] = ids
				}
				j.result <- out
			}
		}()
	}
	var readStats prep.Stats
	readErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		var err error
		readStats, err = prep.ReadBatches(ctx, r.Inputs, prep.ReadOptions{TextKey: r.TextKey, Progress: r.Progress}, batchBytes, func(docs []prep.Doc) error {
			j := job{docs: docs, result: make(chan [][]int, 1)}
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
		readErr <- err
	}()

	w := &shardRotator{run: r, dtype: dtype, manifest: m}
	writeErr := func() error {
		for j := range order {
			var out [][]int
			select {
			case out = <-j.result:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if out == nil { // the worker stopped on an error
				return context.Cause(ctx)
			}
			t0 := time.Now()
			for _, ids := range out {
				if err := w.add(ctx, ids); err != nil {
					return err
				}
				stats.Tokens += int64(len(ids))
			}
			stats.WriteTime += time.Since(t0)
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
	if err != nil {
		w.abort()
		return nil, stats, err
	}
	t0 := time.Now()
	if err := w.finish(ctx); err != nil {
		return nil, stats, err
	}
	if err := shards.WriteManifest(ctx, r.Store, r.Dir, m); err != nil {
		return nil, stats, err
	}
	stats.WriteTime += time.Since(t0)
	stats.Docs, stats.Empty, stats.TextBytes = readStats.Docs, readStats.Empty, readStats.TextBytes
	stats.Shards = len(m.Shards)
	stats.Elapsed = time.Since(start)
	log.Info("tokenize run done", "dataset", r.where(), "docs", stats.Docs, "empty_dropped", stats.Empty,
		"tokens", stats.Tokens, "shards", stats.Shards, "elapsed_s", stats.Elapsed.Seconds(),
		"write_share", stats.WriteTime.Seconds()/max(stats.Elapsed.Seconds(), 1e-9))
	return m, stats, nil
}

func (r *TokenizeRun) where() string {
	if r.Dir == "" {
		return r.Store.String()
	}
	return r.Store.String() + "/" + r.Dir
}

func docWhere(d prep.Doc) string {
	if d.Line > 0 {
		return fmt.Sprintf("%s line %d", d.Source, d.Line)
	}
	return d.Source
}

// shardRotator writes documents to the current shard and starts the next one when it
// reaches ShardBytes.
type shardRotator struct {
	run      *TokenizeRun
	dtype    shards.DType
	manifest *shards.Manifest
	cur      *shards.Writer
	bytes    int64 // .bin bytes in cur
	written  []shards.ShardInfo
}

// shardPrefix names shard k: the first is NAME_text_document (what GPT-NeoX's
// preprocess_data.py writes), the next NAME_text_document_001 and so on.
func (s *shardRotator) shardPrefix(k int) string {
	base := s.run.Name + "_text_document"
	if k == 0 {
		return base
	}
	return fmt.Sprintf("%s_%03d", base, k)
}

func (s *shardRotator) add(ctx context.Context, ids []int) error {
	if s.cur != nil && s.run.ShardBytes > 0 && s.bytes >= s.run.ShardBytes {
		if err := s.closeCurrent(); err != nil {
			return err
		}
	}
	if s.cur == nil {
		key := s.shardPrefix(len(s.written))
		if s.run.Dir != "" {
			key = s.run.Dir + "/" + key
		}
		w, err := shards.NewWriter(ctx, s.run.Store, key, s.dtype)
		if err != nil {
			return err
		}
		s.cur, s.bytes = w, 0
	}
	if err := s.cur.AddDocument(ids); err != nil {
		return err
	}
	s.bytes += int64(len(ids) * s.dtype.Size())
	return nil
}

func (s *shardRotator) closeCurrent() error {
	info, err := s.cur.Close()
	s.cur = nil
	if err != nil {
		return err
	}
	s.written = append(s.written, info)
	return nil
}

// finish closes the last shard and lists every shard in the manifest.
func (s *shardRotator) finish(ctx context.Context) error {
	if s.cur != nil {
		if err := s.closeCurrent(); err != nil {
			return err
		}
	}
	for _, info := range s.written {
		if err := s.manifest.Add(s.run.Dir, info); err != nil {
			return err
		}
	}
	return nil
}

func (s *shardRotator) abort() {
	if s.cur != nil {
		s.cur.Abort()
		s.cur = nil
	}
}
