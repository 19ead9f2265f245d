// Package check holds the argument checks every kernels backend runs before an
// op: tensors present, long enough and of a dtype the op takes; dimensions. A
// failed check panics (a programming error in the caller, as the
// kernels.Backend contract says), naming the op and the argument.
package check

import (
	"fmt"

	"gptkit/kernels"
)

func fail(op, format string, args ...any) {
	panic("kernels: " + op + ": " + fmt.Sprintf(format, args...))
}

// Dims panics unless every dim is positive.
func Dims(op string, dims ...int) {
	for _, d := range dims {
		if d <= 0 {
			fail(op, "dimensions must be positive")
		}
	}
}

// T panics unless t is a floating tensor (float32, bfloat16 or float16) of at
// least n elements.
func T(op, name string, t kernels.Tensor, n int) {
	if t.Nil() {
		fail(op, "%s is missing", name)
	}
	if !t.DType().Floating() {
		fail(op, "%s is %s, want a floating dtype", name, t.DType())
	}
	if t.Len() < n {
		fail(op, "%s too short (%d elements, want %d)", name, t.Len(), n)
	}
}

// Opt is T for an optional argument: the zero Tensor is allowed.
func Opt(op, name string, t kernels.Tensor, n int) {
	if !t.Nil() {
		T(op, name, t, n)
	}
}

// Typed panics unless t is a tensor of dtype dt with at least n elements.
func Typed(op, name string, t kernels.Tensor, dt kernels.DType, n int) {
	if t.Nil() {
		fail(op, "%s is missing", name)
	}
	if t.DType() != dt {
		fail(op, "%s is %s, want %s", name, t.DType(), dt)
	}
	if t.Len() < n {
		fail(op, "%s too short (%d elements, want %d)", name, t.Len(), n)
	}
}

// TypedOpt is Typed for an optional argument.
func TypedOpt(op, name string, t kernels.Tensor, dt kernels.DType, n int) {
	if !t.Nil() {
		Typed(op, name, t, dt, n)
	}
}

// Same panics unless every tensor is floating and at least as long as the
// first, and returns the first one's length (elementwise ops work on it).
func Same(op string, first kernels.Tensor, rest ...kernels.Tensor) int {
	T(op, "output", first, 0)
	n := first.Len()
	for _, s := range rest {
		T(op, "operand", s, n)
	}
	return n
}

// Heads panics unless NH divides C.
func Heads(op string, C, NH int) {
	if C%NH != 0 {
		fail(op, "n_head must divide C")
	}
}

// Vocab panics unless 0 < V ≤ Vp.
func Vocab(op string, V, Vp int) {
	if V > Vp {
		fail(op, "V must be ≤ Vp")
	}
}

// Host panics unless every given tensor is in host memory (the host backends'
// ownership check).
func Host(op string, ts ...kernels.Tensor) {
	for _, t := range ts {
		if !t.Nil() && !t.IsHost() {
			fail(op, "%s is not in host memory (another backend's tensor?)", t)
		}
	}
}

// NoOverlap panics if out overlaps any of ins (an output written while an input
// is still read).
func NoOverlap(op string, out kernels.Tensor, ins ...kernels.Tensor) {
	for _, in := range ins {
		if out.Overlaps(in) {
			fail(op, "output %s overlaps input %s", out, in)
		}
	}
}
