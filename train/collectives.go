package train

import (
	"context"
	"fmt"
)

// Collectives is how the data-parallel ranks of a run talk: the trainer all-reduces
// the flat gradient once per optimizer step (and the step's loss), and broadcasts
// rank 0's initial weights so every rank starts alike. Every rank calls the same
// methods in the same order. Single is the one-process implementation; the
// distributed backends implement the same interface.
type Collectives interface {
	// Rank is this process's rank in [0, World()).
	Rank() int
	// World is the number of ranks.
	World() int
	// AllReduceSum replaces buf on every rank with the elementwise sum over the ranks
	// of their buf. The result must be bit-identical on every rank (sum in a fixed
	// order), so the ranks' weights never drift apart.
	AllReduceSum(ctx context.Context, buf []float32) error
	// Broadcast replaces buf on every rank with root's.
	Broadcast(ctx context.Context, buf []float32, root int) error
	// Barrier returns once every rank has called it.
	Barrier(ctx context.Context) error
}

// Single is the Collectives of a one-process run: rank 0 of 1, and every collective
// leaves buf as it is (and never fails: a cancelled context is noticed between steps).
type Single struct{}

var _ Collectives = Single{}

// Rank implements Collectives.
func (Single) Rank() int { return 0 }

// World implements Collectives.
func (Single) World() int { return 1 }

// AllReduceSum implements Collectives: the sum over one rank is buf itself.
func (Single) AllReduceSum(ctx context.Context, buf []float32) error { return nil }

// Broadcast implements Collectives.
func (Single) Broadcast(ctx context.Context, buf []float32, root int) error {
	if root != 0 {
		return fmt.Errorf("train: broadcast from rank %d in a world of 1", root)
	}
	return nil
}

// Barrier implements Collectives.
func (Single) Barrier(ctx context.Context) error { return nil }
