package kerneltest

import (
	"testing"

	"gptkit/kernels"
)

// panics checks that bad arguments panic instead of reading or writing out of
// bounds (the Backend contract).
func panics(t *testing.T, be kernels.Backend) {
	a := newArena(be)
	defer a.free()
	f := func(n int) kernels.Tensor { return a.alloc(kernels.Float32, n) }
	bf := func(n int) kernels.Tensor { return a.alloc(kernels.BFloat16, n) }
	ids := func(x ...int32) kernels.Tensor { return a.ids(x) }
	none := kernels.Tensor{}
	cases := map[string]func(){
		"matmul short out":        func() { be.MatmulForward(f(5), f(6), f(6), none, 2, 3, 3) },
		"matmul zero dim":         func() { be.MatmulForward(f(6), f(6), f(6), none, 2, 0, 3) },
		"matmul short weight":     func() { be.MatmulBackward(f(6), f(9), none, f(6), f(6), f(8), none, 2, 3, 3) },
		"matmul bf16 dweight":     func() { be.MatmulBackward(f(6), bf(9), none, f(6), f(6), f(9), none, 2, 3, 3) },
		"matmul missing inp":      func() { be.MatmulForward(f(6), none, f(9), none, 2, 3, 3) },
		"layernorm short rstd":    func() { be.LayerNormForward(f(6), f(2), f(1), f(6), f(3), none, 2, 3) },
		"layernorm bf16 mean":     func() { be.LayerNormForward(f(6), bf(2), f(2), f(6), f(3), none, 2, 3) },
		"attention heads":         func() { be.AttentionForward(f(10), f(4), f(30), 1, 2, 5, 2) },
		"attention short lse":     func() { be.AttentionForward(f(8), f(3), f(24), 1, 2, 4, 2) },
		"encoder bad token":       func() { be.EncoderForward(f(4), ids(0, 7), f(6), f(4), 1, 2, 2) },
		"encoder float ids":       func() { be.EncoderForward(f(4), f(2), f(6), f(4), 1, 2, 2) },
		"classifier V > Vp":       func() { be.Classifier(f(1), none, none, none, f(4), f(2), f(8), ids(0), 1, 1, 2, 5, 4) },
		"classifier target":       func() { be.Classifier(f(1), none, none, none, f(4), f(2), f(8), ids(3), 1, 1, 2, 3, 4) },
		"classifier no scratch":   func() { be.Classifier(f(1), none, none, none, f(3), f(2), f(8), ids(0), 1, 1, 2, 3, 4) },
		"dropout p=1":             func() { be.DropoutForward(f(8), f(8), 1, 0) },
		"dropout short input":     func() { be.DropoutForward(f(8), f(7), 0.5, 0) },
		"adamw step 0":            func() { be.AdamW(f(3), f(3), f(3), f(3), none, none, kernels.AdamW{LR: 1, Step: 0}) },
		"adamw bf16 moments":      func() { be.AdamW(f(3), f(3), bf(3), f(3), none, none, kernels.AdamW{LR: 1, Step: 1}) },
		"sumsquares not a block":  func() { be.SumSquares(a.alloc(kernels.Float64, 2), f(7), 3) },
		"sumsquares short out":    func() { be.SumSquares(a.alloc(kernels.Float64, 1), f(6), 3) },
		"convert short source":    func() { be.Convert(bf(8), f(7)) },
		"upload wrong size":       func() { be.Upload(f(4), make([]byte, 15)) },
		"download wrong size":     func() { be.Download(make([]byte, 17), f(4)) },
		"residual layernorm no b": func() { be.ResidualLayerNormForward(f(6), f(6), f(2), f(2), f(6), none, f(3), none, 2, 3) },
	}
	for name, fn := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}
