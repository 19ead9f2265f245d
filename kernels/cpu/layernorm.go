package cpu

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

const lnEps = 1e-5

// lnChunk is the row chunk of LayerNormBackward's weight and bias gradient
// sums: each chunk's partial sums are combined in chunk order.
const lnChunk = 32

// LayerNormForward implements kernels.Backend, parallel over rows; float32
// arithmetic with a two-pass variance.
func (be *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias kernels.Tensor, N, C int) {
	check.LayerNorm("layernorm forward", out, mean, rstd, inp, weight, bias, N, C)
	check.Host("layernorm forward", out, mean, rstd, inp, weight, bias)
	be.mu.Lock()
	defer be.mu.Unlock()
	x, w, b := be.in(inp, N*C, slotA), be.in(weight, C, slotB), be.in(bias, C, slotC)
	o := be.out(out, N*C, slotD)
	be.layerNorm(o, mean.Float32s(), rstd.Float32s(), x, w, b, N, C)
	be.store(out, o)
}

// ResidualLayerNormForward implements kernels.Backend: per row, res = a + b,
// then the row's layernorm while it is in cache. A 16-bit res is rounded before
// the layernorm reads it, as the GPU reads what it stored.
func (be *Backend) ResidualLayerNormForward(res, out, mean, rstd, a, b, weight, bias kernels.Tensor, N, C int) {
	check.ResidualLayerNorm(res, out, mean, rstd, a, b, weight, bias, N, C)
	check.Host("residual layernorm forward", res, out, mean, rstd, a, b, weight, bias)
	be.mu.Lock()
	defer be.mu.Unlock()
	x, y := be.in(a, N*C, slotA), be.in(b, N*C, slotB)
	w, bs := be.in(weight, C, slotC), be.in(bias, C, slotD)
	r, o := be.out(res, N*C, slotE), be.out(out, N*C, slotF)
	dt := res.DType()
	be.rows(N, C, func(lo, hi int) {
		vecAdd(r[lo*C:hi*C], x[lo*C:hi*C], y[lo*C:hi*C])
		if dt != kernels.Float32 {
			for i := lo * C; i < hi*C; i++ {
				r[i] = kernels.Round(dt, r[i])
			}
		}
		layerNormRows(o, mean.Float32s(), rstd.Float32s(), r, w, bs, lo, hi, C)
	})
	be.store(res, r)
	be.store(out, o)
}

// rows runs fn over chunks of rows in parallel.
func (be *Backend) rows(N, C int, fn func(lo, hi int)) {
	be.forChunks(N, max(1, elementGrain/4/C), fn)
}

func (be *Backend) layerNorm(out, mean, rstd, inp, weight, bias []float32, N, C int) {
	be.rows(N, C, func(lo, hi int) { layerNormRows(out, mean, rstd, inp, weight, bias, lo, hi, C) })
}

func layerNormRows(out, mean, rstd, inp, weight, bias []float32, lo, hi, C int) {
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
}

// LayerNormBackward implements kernels.Backend: dinp row by row in parallel
// (starting from dres, or zero); dweight and dbias as per-chunk partial sums
// (lnChunk rows each) added in chunk order.
func (be *Backend) LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd kernels.Tensor, N, C int) {
	check.LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd, N, C)
	check.Host("layernorm backward", dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd)
	be.mu.Lock()
	defer be.mu.Unlock()
	d, x, w := be.in(dout, N*C, slotA), be.in(inp, N*C, slotB), be.in(weight, C, slotC)
	var di []float32
	switch {
	case dres.Same(dinp):
		di = be.inout(dinp, N*C, slotD)
	case dres.Nil():
		di = be.out(dinp, N*C, slotD)
		be.forChunks(N*C, 1<<18, func(lo, hi int) { clear(di[lo:hi]) })
	default:
		di = be.out(dinp, N*C, slotD)
		src := be.in(dres, N*C, slotE)
		be.forChunks(N*C, 1<<18, func(lo, hi int) { copy(di[lo:hi], src[lo:hi]) })
	}
	ms, rs := mean.Float32s(), rstd.Float32s()
	chunks := ceilDiv(N, lnChunk)
	parts := be.partials(chunks * 2 * C)
	be.pool.run(chunks, func(_, k int) {
		dw := parts[k*2*C:][:C]
		db := parts[k*2*C+C:][:C]
		clear(dw)
		clear(db)
		for n := k * lnChunk; n < min(N, (k+1)*lnChunk); n++ {
			lnBackwardRow(di[n*C:][:C], dw, db, d[n*C:][:C], x[n*C:][:C], w, ms[n], rs[n])
		}
	})
	be.store(dinp, di)
	dwt := dweight.Float32s()
	var dbt []float32
	if !dbias.Nil() {
		dbt = dbias.Float32s()
	}
	const width = 256
	be.pool.run(ceilDiv(C, width), func(_, k int) {
		c0, c1 := k*width, min(C, (k+1)*width)
		for c := c0; c < c1; c++ {
			var sw, sb float32
			for j := 0; j < chunks; j++ {
				sw += parts[j*2*C+c]
				sb += parts[j*2*C+C+c]
			}
			dwt[c] += sw
			if dbt != nil {
				dbt[c] += sb
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
