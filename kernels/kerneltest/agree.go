package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"gptkit/kernels"
)

// allOpsNames names allOps' outputs, in order.
var allOpsNames = []string{
	"encoder forward", "encoder backward dwte", "encoder backward dwpe",
	"layernorm forward", "layernorm mean", "layernorm rstd", "layernorm backward dinp", "layernorm backward dweight", "layernorm backward dbias",
	"matmul 3C forward", "matmul 3C backward dinp", "matmul 3C backward dweight", "matmul 3C backward dbias",
	"matmul 4C forward", "matmul 4C backward dinp", "matmul 4C backward dweight", "matmul 4C backward dbias",
	"matmul C forward", "matmul C backward dinp", "matmul C backward dweight", "matmul C backward dbias",
	"matmul 203 forward", "matmul 203 backward dinp", "matmul 203 backward dweight", "matmul 203 backward dbias",
	"attention probabilities", "attention forward", "attention backward",
	"gelu forward", "gelu backward", "dropout forward", "dropout backward",
	"crossentropy losses", "crossentropy probs", "crossentropy backward",
	"adamw params", "adamw m", "adamw v", "sumsquares",
}

// Agree runs every op on the same inputs on a and b (Deterministic's shapes)
// and reports, per output, whether the two agree bit for bit or by how much
// they differ; outputs further apart than tol (the suite's relative measure)
// fail. For comparing two implementations of one backend: the simulated GPU
// and the real one.
func Agree(t *testing.T, a, b kernels.Backend, tol float64) {
	ga, gb := allOps(a), allOps(b)
	for k := range ga {
		name := fmt.Sprintf("output %d", k)
		if k < len(allOpsNames) {
			name = allOpsNames[k]
		}
		identical, worst := true, 0.0
		var mean float64
		for _, w := range gb[k] {
			mean += math.Abs(float64(w))
		}
		mean /= float64(max(len(gb[k]), 1))
		for j := range ga[k] {
			x, y := ga[k][j], gb[k][j]
			if math.Float32bits(x) != math.Float32bits(y) {
				identical = false
				e := math.Abs(float64(x)-float64(y)) / (math.Abs(float64(y)) + mean + 1e-30)
				if math.IsNaN(e) {
					e = math.Inf(1)
				}
				worst = max(worst, e)
			}
		}
		switch {
		case identical:
			t.Logf("%-28s bit-identical", name)
		case worst <= tol:
			t.Logf("%-28s max relative difference %.2g", name, worst)
		default:
			t.Errorf("%-28s max relative difference %.2g > %.2g (%s vs %s)", name, worst, tol, a.Name(), b.Name())
		}
	}
}
