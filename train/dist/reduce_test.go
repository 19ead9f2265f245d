package dist

import (
	"fmt"
	"math"
	"testing"
)

// TestReductions: add and addDiv (AVX2 where the CPU has it) give the plain Go
// loops' bits at every length and alignment, special values included.
func TestReductions(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, 1e-45, -1e-45}
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100, 1027} {
		for _, skew := range []int{0, 1, 3} {
			in := randomBufs(2, n+skew, uint64(n))
			a, b := in[0][skew:], in[1][skew:]
			for i := range min(len(specials), n) {
				a[i*n/len(specials)] = specials[i]
			}
			for _, w := range []float32{0, 3} {
				got, want := append([]float32(nil), a...), append([]float32(nil), a...)
				if w == 0 {
					add(got, b)
					addGo(want, b)
				} else {
					addDiv(got, b, w)
					addDivGo(want, b, w)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n %d skew %d w %g: [%d] = %g, want %g", n, skew, w, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkAdd: the ring's addition (AVX2 where the CPU has it) against the
// plain Go loop, in cache and beyond.
//
//	go test ./train/dist -run '^$' -bench BenchmarkAdd
func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{128 << 10, 4 << 20} {
		in := randomBufs(2, n, 1)
		for _, f := range []struct {
			name string
			add  func(dst, in []float32)
		}{{"add", add}, {"go", addGo}} {
			b.Run(fmt.Sprint(f.name, "-", n*4>>10, "KiB"), func(b *testing.B) {
				b.SetBytes(int64(n * 4))
				for range b.N {
					f.add(in[0], in[1])
				}
			})
		}
	}
}
