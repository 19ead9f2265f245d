package kerneltest

import (
	"math"
	"testing"

	"gptkit/kernels"
)

// Agree runs every op on the same inputs on a and b (Deterministic's shapes)
// and reports, per output, whether the two agree bit for bit or by how much
// they differ; outputs further apart than tol (the suite's relative measure)
// fail. For comparing two implementations of one backend: the simulated GPU
// and the real one.
func Agree(t *testing.T, a, b kernels.Backend, tol float64) {
	for _, m := range modes {
		agree(t, a, b, m, tol)
	}
}

func agree(t *testing.T, a, b kernels.Backend, m mode, tol float64) {
	ga, gb := allOps(a, m.act), allOps(b, m.act)
	tol = m.tol(tol)
	for k := range ga {
		x, y := widen(ga[k]), widen(gb[k])
		name := m.name + " " + ga[k].name
		identical, worst := true, 0.0
		var mean float64
		for _, w := range y {
			mean += math.Abs(w)
		}
		mean /= float64(max(len(y), 1))
		for j := range x {
			if math.Float64bits(x[j]) != math.Float64bits(y[j]) {
				identical = false
				e := math.Abs(x[j]-y[j]) / (math.Abs(y[j]) + mean + 1e-30)
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

// widen is an output's values as float64s.
func widen(o output) []float64 {
	if o.wide {
		return o.float64s()
	}
	x := make([]float64, len(o.v))
	for i, v := range o.v {
		x[i] = float64(v)
	}
	return x
}
