// Package check holds the argument checks every kernels backend runs before an
// op: lengths and dimensions. A failed check panics (a programming error in the
// caller, as the kernels.Backend contract says), naming the op and the argument.
package check

// Dims panics unless every dim is positive.
func Dims(op string, dims ...int) {
	for _, d := range dims {
		if d <= 0 {
			panic("kernels: " + op + ": dimensions must be positive")
		}
	}
}

// Len panics unless len(s) ≥ n.
func Len(op, name string, s []float32, n int) {
	if len(s) < n {
		panic("kernels: " + op + ": " + name + " too short")
	}
}

// LenOpt is Len for an optional argument: nil is allowed.
func LenOpt(op, name string, s []float32, n int) {
	if s != nil && len(s) < n {
		panic("kernels: " + op + ": " + name + " too short")
	}
}

// Ints panics unless len(s) ≥ n.
func Ints(op, name string, s []int32, n int) {
	if len(s) < n {
		panic("kernels: " + op + ": " + name + " too short")
	}
}

// Same panics unless every slice is at least as long as the first, and returns
// the first one's length (elementwise ops work on len(first)).
func Same(op string, first []float32, rest ...[]float32) int {
	n := len(first)
	for _, s := range rest {
		if len(s) < n {
			panic("kernels: " + op + ": operand shorter than the output")
		}
	}
	return n
}

// Heads panics unless NH divides C.
func Heads(op string, C, NH int) {
	if C%NH != 0 {
		panic("kernels: " + op + ": n_head must divide C")
	}
}

// Vocab panics unless 0 < V ≤ Vp.
func Vocab(op string, V, Vp int) {
	if V > Vp {
		panic("kernels: " + op + ": V must be ≤ Vp")
	}
}
