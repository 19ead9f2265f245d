package kerneltest

import (
	"testing"

	"gptkit/kernels"
)

// panics checks that bad arguments panic instead of reading or writing out of
// bounds (the Backend contract).
func panics(t *testing.T, be kernels.Backend) {
	f := func(n int) []float32 { return be.Alloc(n) }
	cases := map[string]func(){
		"matmul short out":     func() { be.MatmulForward(f(5), f(6), f(6), nil, 2, 3, 3) },
		"matmul zero dim":      func() { be.MatmulForward(f(6), f(6), f(6), nil, 2, 0, 3) },
		"matmul short weight":  func() { be.MatmulBackward(f(6), f(9), nil, f(6), f(6), f(8), 2, 3, 3) },
		"layernorm short rstd": func() { be.LayerNormForward(f(6), f(2), f(1), f(6), f(3), nil, 2, 3) },
		"attention heads":      func() { be.AttentionForward(f(10), f(4), f(30), 1, 2, 5, 2) },
		"encoder bad token":    func() { be.EncoderForward(f(4), []int32{0, 7}, f(6), f(4), 1, 2, 2) },
		"crossentropy V > Vp":  func() { be.CrossEntropyForward(f(1), f(4), f(4), []int32{0}, 1, 5, 4) },
		"crossentropy target":  func() { be.CrossEntropyForward(f(1), f(4), f(4), []int32{3}, 1, 3, 4) },
		"gelu short input":     func() { be.GeluForward(f(8), f(7)) },
		"dropout p=1":          func() { be.DropoutForward(f(8), f(8), 1, 0) },
		"adamw step 0":         func() { be.AdamW(f(3), f(3), f(3), f(3), kernels.AdamW{LR: 1, Step: 0}) },
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
