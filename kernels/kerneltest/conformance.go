// Package kerneltest is the conformance suite every kernels.Backend must pass
// (ref, cpu with and without assembly, cuda on the simulated and the real GPU),
// in the spirit of gonum's blas/testblas: one suite, many implementations.
//
// Conformance checks four things:
//
//   - Agreement with kernels/ref on random inputs at many shapes, awkward ones
//     included (N=1, C not a multiple of 8 or 16, T=1, T not a multiple of the
//     attention block, one head, head sizes 1, 8, 64 and 128, V < Vp, a
//     classifier chunk that does not divide N), in every dtype mode: float32
//     throughout, and bfloat16 and float16 activations with float32 statistics
//     and weight gradients (the mixed-precision step). Tolerances: see
//     tolerances. Weight gradients are pre-filled with random values so their
//     += is checked; every written output is pre-filled with garbage so a
//     backend that accumulates or skips elements fails.
//   - Guards: every tensor a backend sees is a slice of a larger Alloc with
//     sentinel bytes on both sides, read back (Download) after each op, so an
//     out-of-bounds write (a vector store past the end) fails the test.
//   - Gradient checks: a float64 implementation of each forward lives here,
//     written independently of ref; central finite differences of Σ R·out in
//     float64 are compared with the backend's backward given dout = R, by
//     relative error, on small and awkward shapes.
//   - Bad arguments panic (the Backend contract).
//
// Everything goes through Alloc, Upload and Download, so a device backend runs
// the same suite. Deterministic checks that several backends (e.g. one backend
// at different thread counts) produce bit-identical results.
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
	t.Run("memory", func(t *testing.T) { memory(t, newBackend()) })
	t.Run("vs-ref", func(t *testing.T) { vsRef(t, newBackend()) })
	t.Run("gradcheck", func(t *testing.T) { gradCheck(t, newBackend()) })
	t.Run("panics", func(t *testing.T) { panics(t, newBackend()) })
}

// guardBytes of sentinel sit on each side of a tensor: one AVX-512 register.
const guardBytes = 64

// sentinel is the guard's 32-bit pattern: as float32 a quiet NaN with a payload
// no kernel produces by arithmetic.
const sentinel = 0x7fc0dead

func guardPattern(b []byte) {
	for i := range b {
		b[i] = byte(uint32(sentinel) >> (8 * (i % 4)))
	}
}

// arena hands out guarded tensors from one backend and checks the guards.
type arena struct {
	be   kernels.Backend
	bufs []kernels.Tensor // whole allocations, guards included
}

func newArena(be kernels.Backend) *arena { return &arena{be: be} }

// alloc returns n zeros of dt with guards on both sides.
func (a *arena) alloc(dt kernels.DType, n int) kernels.Tensor {
	g := guardBytes / dt.Size()
	t, err := a.be.Alloc("kerneltest", dt, n+2*g)
	if err != nil {
		panic(err)
	}
	raw := make([]byte, t.Bytes())
	guardPattern(raw[:guardBytes])
	guardPattern(raw[len(raw)-guardBytes:])
	a.be.Upload(t, raw)
	a.bufs = append(a.bufs, t)
	return t.Slice(g, g+n)
}

// in returns a guarded tensor of dt holding x rounded to dt; nil stays none.
func (a *arena) in(dt kernels.DType, x []float32) kernels.Tensor {
	if x == nil {
		return kernels.Tensor{}
	}
	t := a.alloc(dt, len(x))
	kernels.UploadFloat32(a.be, t, x)
	return t
}

// f32 is in(Float32, x).
func (a *arena) f32(x []float32) kernels.Tensor { return a.in(kernels.Float32, x) }

// garbage returns n elements of dt holding values an op that writes its output
// must overwrite (and one that accumulates would add to).
func (a *arena) garbage(dt kernels.DType, n int) kernels.Tensor {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%7) - 3.5
	}
	return a.in(dt, x)
}

// ids returns a guarded Int32 tensor holding x.
func (a *arena) ids(x []int32) kernels.Tensor {
	t := a.alloc(kernels.Int32, len(x))
	a.be.Upload(t, kernels.Int32Bytes(x))
	return t
}

// f64 returns a guarded Float64 tensor holding x.
func (a *arena) f64(x []float64) kernels.Tensor {
	t := a.alloc(kernels.Float64, len(x))
	a.be.Upload(t, kernels.Float64Bytes(x))
	return t
}

// read downloads a floating tensor widened to float32.
func (a *arena) read(t kernels.Tensor) []float32 { return kernels.DownloadFloat32(a.be, t) }

// read64 downloads a Float64 tensor.
func (a *arena) read64(t kernels.Tensor) []float64 {
	out := make([]float64, t.Len())
	a.be.Download(kernels.Float64Bytes(out), t)
	return out
}

func (a *arena) checkGuards(t *testing.T, op string) {
	t.Helper()
	want := make([]byte, guardBytes)
	guardPattern(want)
	for k, buf := range a.bufs {
		raw := make([]byte, buf.Bytes())
		a.be.Download(raw, buf)
		n := len(raw) - 2*guardBytes
		for i := 0; i < guardBytes; i++ {
			if raw[i] != want[i] {
				t.Fatalf("%s: buffer %d: a write %d bytes before the start", op, k, guardBytes-i)
			}
			if raw[guardBytes+n+i] != want[i] {
				t.Fatalf("%s: buffer %d (%d bytes): a write at byte %d, past the end", op, k, n, n+i)
			}
		}
	}
}

// free returns the arena's memory to the backend.
func (a *arena) free() {
	for _, b := range a.bufs {
		a.be.Free(b)
	}
	a.bufs = nil
}

// compare runs body on ref and on be, each with its own arena, and compares
// every returned output within tol (relative; see closeEnough). tol 0 means
// bit-identical.
func compare(t *testing.T, be kernels.Backend, name string, tol float64, body func(a *arena) []kernels.Tensor) {
	t.Helper()
	ra := newArena(ref.New())
	want := body(ra)
	ra.checkGuards(t, name+" (ref)")
	ba := newArena(be)
	defer ba.free()
	got := body(ba)
	ba.checkGuards(t, name)
	for i := range want {
		w, g := ra.read(want[i]), ba.read(got[i])
		if err := closeEnough(g, w, tol); err != nil {
			t.Errorf("%s: output %d (%s): %v", name, i, want[i].DType(), err)
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
		if !math.IsInf(float64(w), 0) && !math.IsNaN(float64(w)) {
			mean += math.Abs(float64(w))
		}
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

// newRand is the suite's deterministic source; each test gets its own.
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

// memory checks Alloc, Upload, Download and views: zeroed memory, round trips
// of every dtype, slices addressing the right elements, Free.
func memory(t *testing.T, be kernels.Backend) {
	for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16, kernels.Float16, kernels.Int32, kernels.Float64} {
		x, err := be.Alloc("kerneltest memory", dt, 1001)
		if err != nil {
			t.Fatal(err)
		}
		if x.Len() != 1001 || x.DType() != dt || x.Bytes() != 1001*dt.Size() {
			t.Fatalf("%s: Alloc gave %s", dt, x)
		}
		raw := make([]byte, x.Bytes())
		be.Download(raw, x)
		for i, b := range raw {
			if b != 0 {
				t.Fatalf("%s: Alloc not zeroed at byte %d", dt, i)
			}
		}
		for i := range raw {
			raw[i] = byte(i*7 + 1)
		}
		be.Upload(x, raw)
		part := make([]byte, 10*dt.Size())
		be.Download(part, x.Slice(500, 510))
		for i, b := range part {
			if b != raw[500*dt.Size()+i] {
				t.Fatalf("%s: slice [500:510] byte %d = %d, want %d", dt, i, b, raw[500*dt.Size()+i])
			}
		}
		be.Upload(x.Slice(0, 10), part)
		be.Download(raw[:10*dt.Size()], x.Slice(0, 10))
		for i := range part {
			if raw[i] != part[i] {
				t.Fatalf("%s: upload into slice [0:10] wrote %d at byte %d, want %d", dt, raw[i], i, part[i])
			}
		}
		if dt.Floating() {
			be.Zero(x.Slice(1, 1000))
			be.Download(raw, x)
			for i := dt.Size(); i < 1000*dt.Size(); i++ {
				if raw[i] != 0 {
					t.Fatalf("%s: Zero of [1:1000] left byte %d = %d", dt, i, raw[i])
				}
			}
			if raw[0] == 0 || raw[len(raw)-1] == 0 {
				t.Fatalf("%s: Zero of [1:1000] wrote outside it", dt)
			}
		}
		be.Free(x)
	}
}
