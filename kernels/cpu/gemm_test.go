package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/kerneltest"
)

// newBackendKernel is a backend forced onto micro-kernel mk.
func newBackendKernel(threads int, mk microKernel) *Backend {
	be := newBackend(threads)
	be.kernel = &mk
	return be
}

// TestMicroKernels: every micro-kernel this machine runs against float64 sums,
// with A packed (rs=1, ps=MR) and row-major (rs=lda, ps=1), alpha 1 and not,
// and guard values around the C tile.
func TestMicroKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, mk := range kernelsAvailable() {
		for _, k := range []int{1, 2, 3, 7, 64, 255, 256} {
			for _, layout := range []string{"packed", "rowmajor"} {
				rs, ps := 1, mk.mr
				if layout == "rowmajor" {
					rs, ps = k+3, 1
				}
				a := make([]float32, (mk.mr-1)*rs+(k-1)*ps+1)
				b := make([]float32, k*mk.nr)
				for i := range a {
					a[i] = float32(r.NormFloat64())
				}
				for i := range b {
					b[i] = float32(r.NormFloat64())
				}
				const ldc = 70
				alpha := float32(1)
				if k%2 == 1 {
					alpha = 0.3
				}
				c := make([]float32, mk.mr*ldc+8)
				want := make([]float32, len(c))
				for i := range c {
					c[i] = float32(r.NormFloat64())
				}
				copy(want, c)
				mk.fn(k, a, rs, ps, b, mk.nr, c, ldc, alpha)
				for i := 0; i < mk.mr; i++ {
					for j := 0; j < mk.nr; j++ {
						var acc float64
						for p := 0; p < k; p++ {
							acc += float64(a[i*rs+p*ps]) * float64(b[p*mk.nr+j])
						}
						want[i*ldc+j] += float32(float64(alpha) * acc)
					}
				}
				for i := range c {
					inTile := i/ldc < mk.mr && i%ldc < mk.nr
					if !inTile && c[i] != want[i] {
						t.Fatalf("%s k=%d %s: wrote outside the tile at %d", mk.name, k, layout, i)
					}
					if inTile && math.Abs(float64(c[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i])))*math.Sqrt(float64(k)) {
						t.Fatalf("%s k=%d %s: c[%d] = %v, want %v", mk.name, k, layout, i, c[i], want[i])
					}
				}
			}
		}
	}
}

// TestConformanceKernels runs the suite on every micro-kernel, not only the
// one this machine would pick.
func TestConformanceKernels(t *testing.T) {
	for _, mk := range kernelsAvailable() {
		t.Run(mk.name, func(t *testing.T) {
			kerneltest.Conformance(t, func() kernels.Backend { return newBackendKernel(2, mk) })
		})
	}
}

// TestKernelsAgree: the FMA micro-kernels compute each element identically
// (same accumulation order), so AVX2 and AVX-512 results are bit-identical.
func TestKernelsAgree(t *testing.T) {
	var bes []kernels.Backend
	for _, mk := range kernelsAvailable() {
		if mk.name != "go" {
			bes = append(bes, newBackendKernel(2, mk))
		}
	}
	if len(bes) < 2 {
		t.Skip("fewer than two FMA micro-kernels on this machine")
	}
	kerneltest.Deterministic(t, bes...)
}
