package loader

import (
	"errors"
	"fmt"
)

// Cursor is a run's position in the global sample sequence: how many samples all
// ranks together have consumed. After `iteration` optimizer steps it is
// iteration*train_batch_size (train_batch_size = Micro*World*GradAccum), the
// number of samples GPT-NeoX skips on resume. It does not depend on the rank or
// the world size, so it is what a checkpoint stores.
type Cursor struct {
	Consumed int64 `json:"consumed"`
}

// Sampler hands one data-parallel rank its micro-batches, as GPT-NeoX's loader
// (SequentialSampler + DistributedBatchSampler) does: global micro-batch g is the
// Micro*World consecutive samples [g*Micro*World, (g+1)*Micro*World), and rank r
// takes [g*Micro*World + r*Micro, g*Micro*World + (r+1)*Micro). GradAccum
// micro-batches make one optimizer step (a global batch of Micro*World*GradAccum
// samples).
//
// Resuming is exact: set Cursor to the checkpoint's. It is also elastic: a run
// restarted with another World and Micro but the same Micro*World (and so, with
// the same GradAccum, the same global batch) sees the same global sample sequence,
// split differently over the ranks. The cursor must then fall on a global
// micro-batch boundary of the new layout, which it does at every step boundary.
type Sampler struct {
	Samples   Source
	Rank      int
	World     int
	Micro     int // samples per rank per micro-batch
	GradAccum int // micro-batches per optimizer step (0 means 1)
	Cursor    Cursor
}

// Validate checks the layout and that the cursor is on a global micro-batch
// boundary.
func (s *Sampler) Validate() error {
	switch {
	case s.Samples == nil:
		return errors.New("loader: sampler has no samples")
	case s.World < 1:
		return fmt.Errorf("loader: world size %d < 1", s.World)
	case s.Rank < 0 || s.Rank >= s.World:
		return fmt.Errorf("loader: rank %d is not in [0,%d)", s.Rank, s.World)
	case s.Micro < 1:
		return fmt.Errorf("loader: micro-batch size %d < 1", s.Micro)
	case s.GradAccum < 0:
		return fmt.Errorf("loader: gradient accumulation %d < 0", s.GradAccum)
	case s.Cursor.Consumed < 0:
		return fmt.Errorf("loader: cursor %d < 0", s.Cursor.Consumed)
	case s.Cursor.Consumed%s.GlobalMicro() != 0:
		return fmt.Errorf("loader: cursor %d is not a multiple of the global micro-batch %d (micro %d x world %d): resume with a micro-batch x world that divides %d (or the checkpoint's)",
			s.Cursor.Consumed, s.GlobalMicro(), s.Micro, s.World, s.Cursor.Consumed)
	}
	return nil
}

// GlobalMicro is Micro*World, the samples of one global micro-batch.
func (s *Sampler) GlobalMicro() int64 { return int64(s.Micro) * int64(s.World) }

// GlobalBatch is Micro*World*GradAccum, the samples of one optimizer step
// (GPT-NeoX's train_batch_size).
func (s *Sampler) GlobalBatch() int64 { return s.GlobalMicro() * int64(max(s.GradAccum, 1)) }

// AtStep reports whether the cursor is on an optimizer step boundary.
func (s *Sampler) AtStep() bool { return s.Cursor.Consumed%s.GlobalBatch() == 0 }

// Next returns this rank's next micro-batch (Micro samples, each Len+1 ids for
// Samples) and advances the cursor by a whole global micro-batch. It reuses dst's
// slices. When the global micro-batch would run past the end of the samples it
// returns an error naming the counts and leaves the cursor unchanged: GPT-NeoX
// sizes the index for every sample a run needs (num-samples), so running out
// means num-samples was too small.
func (s *Sampler) Next(dst [][]int) ([][]int, error) {
	first, err := s.advance()
	if err != nil {
		return dst[:0], err
	}
	dst = dst[:0]
	for k := 0; k < s.Micro; k++ {
		var buf []int
		if k < cap(dst) {
			buf = dst[:k+1][k][:0]
		}
		dst = append(dst, s.Samples.Sample(first+int64(k), buf))
	}
	return dst, nil
}

// advance checks the layout and that the next global micro-batch exists, moves the
// cursor past it and returns this rank's first sample in it.
func (s *Sampler) advance() (int64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	g := s.GlobalMicro()
	// Consumed > Len-g rather than Consumed+g > Len: a cursor read from a damaged
	// checkpoint near 2^63 would wrap the sum.
	if s.Cursor.Consumed > s.Samples.Len()-g {
		return 0, fmt.Errorf("loader: the global micro-batch at sample %d needs samples up to %d, but there are only %d samples (raise the number of samples the index is built for)",
			s.Cursor.Consumed, uint64(s.Cursor.Consumed)+uint64(g), s.Samples.Len())
	}
	first := s.Cursor.Consumed + int64(s.Rank)*int64(s.Micro)
	s.Cursor.Consumed += g
	return first, nil
}

// NextInt32 is Next for kernels: it appends this rank's next micro-batch to dst as
// one flat slice of Micro*(L+1) int32 ids (sample k at [k*(L+1), (k+1)*(L+1))) and
// advances the cursor like Next. With a dst of enough capacity it allocates nothing.
func (s *Sampler) NextInt32(dst []int32) ([]int32, error) {
	first, err := s.advance()
	if err != nil {
		return dst, err
	}
	for k := 0; k < s.Micro; k++ {
		dst = s.Samples.SampleInt32(first+int64(k), dst)
	}
	return dst, nil
}
