package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Batch is one micro-batch a Prefetcher delivers.
type Batch struct {
	// Tokens holds the rank's Micro samples of L+1 int32 ids back to back (sample
	// k at [k*(L+1), (k+1)*(L+1))).
	Tokens []int32
	// Cursor is the sampler's cursor after this micro-batch: what a checkpoint
	// taken once it has been consumed stores.
	Cursor Cursor
	// StepEnd reports that this micro-batch completes an optimizer step (the
	// cursor is on a GradAccum boundary).
	StepEnd bool
}

// ErrPrefetchClosed is returned by Next after Close.
var ErrPrefetchClosed = errors.New("loader: prefetcher closed")

// Prefetcher fills a Sampler's micro-batches on its own goroutine, up to depth
// ahead of the consumer, in a fixed ring of depth+2 reused buffers (depth queued,
// one being filled, one held by the consumer), so a steady run allocates nothing.
// It owns the Sampler until Close: read the position from Batch.Cursor.
type Prefetcher struct {
	full   chan *Batch
	free   chan *Batch
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ctx    context.Context

	held   *Batch
	err    error // set by the filler before it closes full
	closed bool
}

// NewPrefetcher starts filling s's micro-batches, depth (>= 1) ahead, until ctx is
// cancelled, Close is called or the sampler fails (at the end of the samples).
func NewPrefetcher(ctx context.Context, s *Sampler, depth int) (*Prefetcher, error) {
	if depth < 1 {
		return nil, fmt.Errorf("loader: prefetch depth %d < 1", depth)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Prefetcher{full: make(chan *Batch, depth), free: make(chan *Batch, depth+2), cancel: cancel, ctx: ctx}
	size := s.Micro * (s.Samples.SeqLen() + 1)
	for range depth + 2 {
		p.free <- &Batch{Tokens: make([]int32, 0, size)}
	}
	p.wg.Add(1)
	go p.fill(ctx, s)
	return p, nil
}

func (p *Prefetcher) fill(ctx context.Context, s *Sampler) {
	defer p.wg.Done()
	defer close(p.full)
	for {
		var b *Batch
		select {
		case <-ctx.Done():
			p.err = ctx.Err()
			return
		case b = <-p.free:
		}
		var err error
		if b.Tokens, err = s.NextInt32(b.Tokens[:0]); err != nil {
			p.err = err
			return
		}
		b.Cursor, b.StepEnd = s.Cursor, s.AtStep()
		select {
		case <-ctx.Done():
			p.err = ctx.Err()
			return
		case p.full <- b:
		}
	}
}

// Next returns the next micro-batch. It is valid until the next call to Next or
// Close, which recycle its buffer. After the last micro-batch, or once ctx is
// cancelled, it returns the sampler's or the context's error.
func (p *Prefetcher) Next() (*Batch, error) {
	if p.closed {
		return nil, ErrPrefetchClosed
	}
	if p.held != nil {
		p.free <- p.held // never blocks: the ring has room for every buffer
		p.held = nil
	}
	b, ok := <-p.full
	if !ok {
		return nil, p.err
	}
	if p.ctx.Err() != nil {
		// Cancelled while this batch was queued: stop here, as the filler did.
		p.free <- b
		return nil, p.ctx.Err()
	}
	p.held = b
	return b, nil
}

// Close stops the filler and waits for it. Batches must not be used afterwards.
func (p *Prefetcher) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.cancel()
	p.wg.Wait()
	p.held = nil
	return nil
}
