package cpu

import (
	"math"

	"gptkit/kernels/internal/check"
)

const lnEps = 1e-5

// lnChunk is the row chunk of LayerNormBackward's weight and bias gradient
// sums: each chunk's partial sums are combined in chunk order.
const lnChunk = 32

// LayerNormForward implements kernels.Backend, parallel over rows; float32
// arithmetic with a two-pass variance.
func (be *Backend) LayerNormForward(out, mean, rstd []float32, inp, weight, bias []float32, N, C int) {
	const op = "layernorm forward"
	check.Dims(op, N, C)
	check.Len(op, "out", out, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.LenOpt(op, "bias", bias, C)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(N, max(1, elementGrain/4/C), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			x := inp[n*C:][:C]
			// Two passes: a first mean, then Σd and Σd² of d = x - mean, which
			// corrects the mean (a float32 sum of a row far from zero loses
			// digits) and gives the variance without cancellation.
			m := vecSum(x) / float32(C)
			sd, sd2 := sumDiffs(x, m)
			dm := sd / float32(C)
			m += dm
			v := max(sd2/float32(C)-dm*dm, 0)
			rs := float32(1 / math.Sqrt(float64(v)+lnEps))
			mean[n], rstd[n] = m, rs
			lnNormalize(out[n*C:][:C], x, weight[:C], bias, m, rs)
		}
	})
}

// LayerNormBackward implements kernels.Backend: dinp row by row in parallel;
// dweight and dbias as per-chunk partial sums (lnChunk rows each) added in
// chunk order.
func (be *Backend) LayerNormBackward(dinp, dweight, dbias []float32, dout, inp, weight, mean, rstd []float32, N, C int) {
	const op = "layernorm backward"
	check.Dims(op, N, C)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dout", dout, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.Len(op, "dweight", dweight, C)
	check.LenOpt(op, "dbias", dbias, C)
	be.mu.Lock()
	defer be.mu.Unlock()
	chunks := ceilDiv(N, lnChunk)
	parts := be.partials(chunks * 2 * C)
	be.pool.run(chunks, func(_, k int) {
		dw := parts[k*2*C:][:C]
		db := parts[k*2*C+C:][:C]
		clear(dw)
		clear(db)
		for n := k * lnChunk; n < min(N, (k+1)*lnChunk); n++ {
			lnBackwardRow(dinp[n*C:][:C], dw, db, dout[n*C:][:C], inp[n*C:][:C], weight[:C], mean[n], rstd[n])
		}
	})
	const width = 256
	be.pool.run(ceilDiv(C, width), func(_, k int) {
		c0, c1 := k*width, min(C, (k+1)*width)
		for c := c0; c < c1; c++ {
			var sw, sb float32
			for j := 0; j < chunks; j++ {
				sw += parts[j*2*C+c]
				sb += parts[j*2*C+C+c]
			}
			dweight[c] += sw
			if dbias != nil {
				dbias[c] += sb
			}
		}
	})
}

func vecSumGo(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += v
	}
	return s
}

// sumDiffsGo returns Σ(x-m) and Σ(x-m)².
func sumDiffsGo(x []float32, m float32) (s, s2 float32) {
	for _, v := range x {
		d := v - m
		s += d
		s2 += d * d
	}
	return s, s2
}

// lnNormalizeGo: out = (x-m)·rs·w + b (b may be nil).
func lnNormalizeGo(out, x, w, b []float32, m, rs float32) {
	x, w = x[:len(out)], w[:len(out)]
	if b == nil {
		for i := range out {
			out[i] = (x[i] - m) * rs * w[i]
		}
		return
	}
	b = b[:len(out)]
	for i := range out {
		out[i] = (x[i]-m)*rs*w[i] + b[i]
	}
}

// lnBackwardRow: one row of the layernorm backward; adds the row's
// contributions to the chunk partials dw, db.
func lnBackwardRow(dinp, dw, db, dout, x, w []float32, m, rs float32) {
	C := len(dinp)
	dn, dnNorm := lnBackwardSums(dout[:C], x[:C], w[:C], m, rs)
	lnBackwardApply(dinp, dw[:C], db[:C], dout[:C], x[:C], w[:C], m, rs, dn/float32(C), dnNorm/float32(C))
}

// lnBackwardSumsGo returns Σ w·dout and Σ w·dout·(x-m)·rs.
func lnBackwardSumsGo(dout, x, w []float32, m, rs float32) (dn, dnNorm float32) {
	x, w = x[:len(dout)], w[:len(dout)]
	for i := range dout {
		d := w[i] * dout[i]
		dn += d
		dnNorm += d * ((x[i] - m) * rs)
	}
	return dn, dnNorm
}

// lnBackwardApplyGo: norm = (x-m)·rs; db += dout; dw += norm·dout;
// dinp += (w·dout - dnMean - norm·dnNormMean)·rs.
func lnBackwardApplyGo(dinp, dw, db, dout, x, w []float32, m, rs, dnMean, dnNormMean float32) {
	n := len(dinp)
	dw, db, dout, x, w = dw[:n], db[:n], dout[:n], x[:n], w[:n]
	for i := range dinp {
		norm := (x[i] - m) * rs
		db[i] += dout[i]
		dw[i] += norm * dout[i]
		dinp[i] += (w[i]*dout[i] - dnMean - norm*dnNormMean) * rs
	}
}
