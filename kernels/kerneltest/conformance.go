// Package kerneltest is the conformance suite every kernels.Backend must pass
// (ref, cpu with and without assembly, later CUDA), in the spirit of gonum's
// blas/testblas: one suite, many implementations.
//
// Conformance checks three things:
//
//   - Agreement with kernels/ref on random inputs at many shapes, awkward ones
//     included (N=1, C not a multiple of 8 or 16, T=1, odd head counts, V < Vp),
//     with a per-op tolerance (see tolerances). Gradients are pre-filled with
//     random values so the += accumulation is checked too.
//   - Guard sentinels: every buffer a backend sees is carved out of a larger
//     Alloc with NaN-payload guards on both sides, checked after each op, so an
//     out-of-bounds write (a vector store past the end) fails the test.
//   - Gradient checks: a float64 implementation of each forward lives here;
//     central finite differences of Σ R·out in float64 are compared with the
//     backend's backward given dout = R, by relative error, on small shapes.
//
// Deterministic checks that several backends (e.g. one backend at different
// thread counts) produce bit-identical results.
package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

// Conformance runs the whole suite against the backends newBackend returns.
func Conformance(t *testing.T, newBackend func() kernels.Backend) {
	t.Run("vs-ref", func(t *testing.T) { vsRef(t, newBackend()) })
	t.Run("gradcheck", func(t *testing.T) { gradCheck(t, newBackend()) })
	t.Run("panics", func(t *testing.T) { panics(t, newBackend()) })
}

// guardLen is how many float32s of sentinel sit on each side of a buffer: 64
// bytes, one AVX-512 register.
const guardLen = 16

// sentinel is a quiet NaN with a payload no kernel produces by arithmetic.
const sentinel = 0x7fc0dead

// arena hands out guarded buffers from one backend and checks the guards.
type arena struct {
	be   kernels.Backend
	bufs [][]float32 // whole allocations, guards included
}

// alloc returns n zeros with guards on both sides; the slice's capacity ends
// at n so append cannot hide an overrun either.
func (a *arena) alloc(n int) []float32 {
	buf := a.be.Alloc(n + 2*guardLen)
	for i := 0; i < guardLen; i++ {
		buf[i] = math.Float32frombits(sentinel)
		buf[guardLen+n+i] = math.Float32frombits(sentinel)
	}
	a.bufs = append(a.bufs, buf)
	return buf[guardLen : guardLen+n : guardLen+n]
}

// copy returns a guarded buffer holding x; nil stays nil.
func (a *arena) copy(x []float32) []float32 {
	if x == nil {
		return nil
	}
	s := a.alloc(len(x))
	copy(s, x)
	return s
}

func (a *arena) checkGuards(t *testing.T, op string) {
	t.Helper()
	for k, buf := range a.bufs {
		n := len(buf) - 2*guardLen
		for i := 0; i < guardLen; i++ {
			if math.Float32bits(buf[i]) != sentinel {
				t.Fatalf("%s: buffer %d: write %d elements before the start", op, k, guardLen-i)
			}
			if math.Float32bits(buf[guardLen+n+i]) != sentinel {
				t.Fatalf("%s: buffer %d (len %d): write at index %d, past the end", op, k, n, n+i)
			}
		}
	}
}

// compare runs body on ref and on be, each with its own arena, and compares
// every returned output within tol (relative; see closeEnough). tol 0 means
// bit-identical.
func compare(t *testing.T, be kernels.Backend, name string, tol float64, body func(a *arena) [][]float32) {
	t.Helper()
	ra := &arena{be: ref.New()}
	want := body(ra)
	ra.checkGuards(t, name+" (ref)")
	ba := &arena{be: be}
	got := body(ba)
	be.Sync()
	ba.checkGuards(t, name)
	for i := range want {
		if err := closeEnough(got[i], want[i], tol); err != nil {
			t.Errorf("%s: output %d: %v", name, i, err)
		}
	}
}

// closeEnough reports the worst element where |got-want| > tol·(|want| +
// mean|want|): relative error, with the mean magnitude as a floor so elements
// near zero after cancellation are judged against the output's scale.
func closeEnough(got, want []float32, tol float64) error { return closeFloor(got, want, tol, 0) }

func closeFloor(got, want []float32, tol, floor float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	var mean float64
	for _, w := range want {
		mean += math.Abs(float64(w))
	}
	if len(want) > 0 {
		mean /= float64(len(want))
	}
	worst, wi := 0.0, -1
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if tol == 0 {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				return fmt.Errorf("element %d = %v, want exactly %v", i, got[i], want[i])
			}
			continue
		}
		if math.IsNaN(g) != math.IsNaN(w) || (math.IsInf(w, 0) && g != w) {
			return fmt.Errorf("element %d = %v, want %v", i, g, w)
		}
		if math.IsNaN(w) || math.IsInf(w, 0) {
			continue
		}
		e := math.Abs(g-w) / (math.Abs(w) + mean + floor + 1e-30)
		if !(e <= worst) {
			worst, wi = e, i
		}
	}
	if wi >= 0 && !(worst <= tol) {
		return fmt.Errorf("element %d = %v, want %v (relative error %.3g > %.3g)", wi, got[wi], want[wi], worst, tol)
	}
	return nil
}

// rng is the suite's deterministic source; each test gets its own.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6b65726e656c73)) }

// uniform returns n values in [-s, s).
func uniform(r *rand.Rand, n int, s float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = (2*r.Float32() - 1) * s
	}
	return x
}

// normal returns n values from N(0, s²).
func normal(r *rand.Rand, n int, s float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * s)
	}
	return x
}

// Close reports whether got matches want within tol, by the suite's relative
// measure with an absolute floor: |got-want| ≤ tol·(|want| + mean|want| +
// floor) per element. For differential tests and fuzz targets outside this
// package; floor is the scale of the terms summed (1 for unit-scale data), so
// an output that is small only by cancellation is not held to a relative
// error it cannot have.
func Close(got, want []float32, tol, floor float64) error {
	return closeFloor(got, want, tol, floor)
}

// Tolerance is the suite's tolerance for float32 sums (matmul, attention,
// reductions) against ref.
const Tolerance = tolSum
