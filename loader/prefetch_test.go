package loader

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestPrefetchMatchesSampler checks that a Prefetcher delivers exactly the
// sampler's micro-batches, with the cursor after each, for several depths, ranks
// and a resume cursor, and then the sampler's end-of-data error.
func TestPrefetchMatchesSampler(t *testing.T) {
	s := testSamples(t)
	L := s.SeqLen()
	for _, depth := range []int{1, 2, 5} {
		for _, c := range []struct{ rank, world, micro, accum int }{{0, 1, 1, 1}, {1, 3, 2, 2}, {2, 4, 3, 1}} {
			for _, from := range []int64{0, int64(2 * c.micro * c.world)} {
				mk := func() *Sampler {
					return &Sampler{Samples: s, Rank: c.rank, World: c.world, Micro: c.micro, GradAccum: c.accum, Cursor: Cursor{Consumed: from}}
				}
				ref := mk()
				p, err := NewPrefetcher(context.Background(), mk(), depth)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for {
					b, err := p.Next()
					want, werr := ref.NextInt32(nil)
					if err != nil {
						if werr == nil || !strings.Contains(err.Error(), "only") {
							t.Fatalf("depth %d %+v: error %v after %d micro-batches, sampler says %v", depth, c, err, n, werr)
						}
						break
					}
					if werr != nil || !slices.Equal(b.Tokens, want) || len(b.Tokens) != c.micro*(L+1) {
						t.Fatalf("depth %d %+v: micro-batch %d differs", depth, c, n)
					}
					if b.Cursor != ref.Cursor || b.StepEnd != ref.AtStep() {
						t.Fatalf("depth %d %+v: micro-batch %d cursor %+v/%v, want %+v/%v", depth, c, n, b.Cursor, b.StepEnd, ref.Cursor, ref.AtStep())
					}
					n++
				}
				if n == 0 {
					t.Fatal("no micro-batches")
				}
				p.Close()
				if _, err := p.Next(); !errors.Is(err, ErrPrefetchClosed) {
					t.Fatalf("Next after Close: %v", err)
				}
			}
		}
	}
	if _, err := NewPrefetcher(context.Background(), &Sampler{Samples: s, World: 1, Micro: 1}, 0); err == nil {
		t.Error("depth 0: no error")
	}
	if _, err := NewPrefetcher(context.Background(), &Sampler{Samples: s, World: 0, Micro: 1}, 1); err == nil {
		t.Error("bad sampler: no error")
	}
}

// TestPrefetchCancel cancels the context while the filler is ahead of a slow
// consumer, and closes a prefetcher that was never read.
func TestPrefetchCancel(t *testing.T) {
	s := testSamples(t)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := NewPrefetcher(ctx, &Sampler{Samples: s, World: 1, Micro: 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	for range 10 {
		if _, err = p.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	p.Close()
	p.Close()

	q, err := NewPrefetcher(context.Background(), &Sampler{Samples: s, World: 1, Micro: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
}

// TestPrefetchNoAllocs checks that a steady run reuses its buffers.
func TestPrefetchNoAllocs(t *testing.T) {
	s := testSamples(t)
	p, err := NewPrefetcher(context.Background(), &Sampler{Samples: s, World: 1, Micro: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Next()
	if n := testing.AllocsPerRun(50, func() { p.Next() }); n > 0 {
		t.Errorf("Next allocates %v times per micro-batch", n)
	}
}
