package cpu

import (
	"fmt"
	"testing"

	"gptkit/kernels"
)

// Matmul benchmarks at the GPT shapes; each reports GFLOP/s. Run e.g.
//
//	go test ./kernels/cpu -run '^$' -bench 'Matmul|Sgemm' -benchtime 3x
//
// Shapes: baby = nanoGPT's CPU config (B·T = 768 rows, C = 128), 124M = GPT-2
// small at T = 1024, B = 1.

type matmulShape struct {
	name     string
	N, C, OC int
}

var babyMatmuls = []matmulShape{
	{"qkv", 768, 128, 384}, {"attproj", 768, 128, 128}, {"fc", 768, 128, 512}, {"fcproj", 768, 512, 128}, {"lmhead", 768, 128, 128},
}

var gpt2Matmuls = []matmulShape{
	{"qkv", 1024, 768, 2304}, {"attproj", 1024, 768, 768}, {"fc", 1024, 768, 3072}, {"fcproj", 1024, 3072, 768}, {"lmhead", 1024, 768, 50304},
}

func benchMatmul(b *testing.B, s matmulShape, threads int, mk microKernel) {
	be := newBackendKernel(threads, mk)
	inp, w, bias := randFloats(s.N*s.C), randFloats(s.OC*s.C), randFloats(s.OC)
	out, dout := randFloats(s.N*s.OC), randFloats(s.N*s.OC)
	dinp, dw, db := randFloats(s.N*s.C), randFloats(s.OC*s.C), randFloats(s.OC)
	flops := 2 * float64(s.N) * float64(s.C) * float64(s.OC)
	H := kernels.Host
	b.Run("fwd", func(b *testing.B) {
		measure(b, flops, func() { be.MatmulForward(H(out), H(inp), H(w), H(bias), s.N, s.C, s.OC) })
	})
	b.Run("bwd", func(b *testing.B) {
		measure(b, 2*flops, func() {
			be.MatmulBackward(H(dinp), H(dw), H(db), H(dout), H(inp), H(w), kernels.Tensor{}, s.N, s.C, s.OC)
		})
	})
}

func BenchmarkMatmul(b *testing.B) {
	for _, set := range []struct {
		name   string
		shapes []matmulShape
	}{{"baby", babyMatmuls}, {"124M", gpt2Matmuls}} {
		for _, s := range set.shapes {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", set.name, s.name, threads), func(b *testing.B) {
					benchMatmul(b, s, threads, selectKernel())
				})
			}
		}
	}
}

// BenchmarkSgemm1024: a square 1024 GEMM (C = A·B, both row-major) on each
// micro-kernel, the figure to compare with a BLAS sgemm.
func BenchmarkSgemm1024(b *testing.B) {
	const n = 1024
	a, bb, c := randFloats(n*n), randFloats(n*n), randFloats(n*n)
	for _, mk := range kernelsAvailable() {
		if mk.name == "go" {
			continue
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", mk.name, threads), func(b *testing.B) {
				be := newBackendKernel(threads, mk)
				g := &gemmArgs{M: n, N: n, K: n, a: operand{x: a, ld: n}, b: operand{x: bb, ld: n}, c: c, ldc: n, alpha: 1}
				measure(b, 2*n*n*n, func() {
					be.mu.Lock()
					be.gemm(g)
					be.mu.Unlock()
				})
			})
		}
	}
}
