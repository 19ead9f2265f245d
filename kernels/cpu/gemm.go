package cpu

// The GEMM behind every matmul (and attention's score and value products):
// C (M×N, row stride ldc) = or += alpha·op(A)·op(B), a packed, blocked GEMM in
// the BLIS/GotoBLAS mould.
//
//	for jc in N step nc:            // column block
//	  for pc in K step kc:          // depth block: fixes each element's summation order
//	    pack B[pc:pc+kc, jc:jc+nc] into NR-wide micro-panels (shared; parallel)
//	    parallel over tasks = (row block of ≤ mc rows) × (chunk of micro-panels):
//	      pack A[rows, pc:pc+kc] into MR-tall micro-panels (per worker)
//	      for each B micro-panel (kc×NR, stays in L1):
//	        for each A micro-panel (kc×MR, from L2):
//	          micro-kernel: C[MR×NR] += Σk a[k]⊗b[k]
//
// Every element of C is computed by exactly one micro-kernel call per depth
// block, with a register accumulator that starts at zero and runs k in order,
// then C += accumulator; so an element's value depends on kc only, never on
// the thread count, the task split or the micro-kernel's tile shape (MR, NR).
// Partial tiles at the edges go through a zeroed MR×NR buffer (A and B are
// zero-padded when packed) and are added to C in Go, with the same arithmetic.

// gemmKC is the depth block. It is part of the numerics (see above): changing
// it changes results in the last bits, so it is a constant, not a tunable.
const gemmKC = 256

// gemmMC and gemmNC bound a task's rows and a column block.
var (
	gemmMC = 192
	gemmNC = 2048
)

// operand is one GEMM input: element (r, c) of op(X) is x[r*ld+c], or x[c*ld+r]
// when trans.
type operand struct {
	x     []float32
	ld    int
	trans bool
}

// gemmArgs describes C = op(A)·op(B)·alpha (+ C when accumulate).
type gemmArgs struct {
	M, N, K    int
	a, b       operand
	c          []float32
	ldc        int
	alpha      float32   // folded into A while packing
	accumulate bool      // C += product; else C = bias + product
	bias       []float32 // optional (N), broadcast over rows when !accumulate
}

// microKernel computes c[MR×NR] (row stride ldc) += a·b over k steps, where a
// holds k columns of MR values and b k rows of NR values (packed panels).
type microKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a, b, c []float32, ldc int)
}

// gemmScratch is one worker's packing buffer for A and an edge tile.
type gemmScratch struct {
	a    []float32
	tile []float32
}

func (s *gemmScratch) ensure(mk *microKernel) {
	if n := gemmMC * gemmKC; len(s.a) < n {
		s.a = alignedFloats(n)
	}
	if n := mk.mr * mk.nr; len(s.tile) < n {
		s.tile = alignedFloats(n)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// gemm runs g on the backend's pool. The caller holds the backend's lock.
func (be *Backend) gemm(g *gemmArgs) {
	mk := be.kernel
	mr, nr := mk.mr, mk.nr
	threads := be.pool.threads
	for w := range be.gemmScratch {
		be.gemmScratch[w].ensure(mk)
	}
	for jc := 0; jc < g.N; jc += gemmNC {
		ncur := min(gemmNC, g.N-jc)
		nTiles := ceilDiv(ncur, nr)
		if n := nTiles * nr * gemmKC; len(be.packedB) < n {
			be.packedB = alignedFloats(n)
		}
		for pc := 0; pc < g.K; pc += gemmKC {
			kcur := min(gemmKC, g.K-pc)
			bp := be.packedB[:nTiles*nr*kcur]
			// Pack B: tasks of up to 8 micro-panels.
			const panelsPerTask = 8
			be.pool.run(ceilDiv(nTiles, panelsPerTask), func(_, t int) {
				for jt := t * panelsPerTask; jt < min(nTiles, (t+1)*panelsPerTask); jt++ {
					packB(bp[jt*nr*kcur:][:nr*kcur], &g.b, pc, kcur, jc+jt*nr, min(nr, ncur-jt*nr), nr)
				}
			})
			// Tasks: row blocks × chunks of column tiles, enough to keep every
			// thread busy; with one thread, one chunk (A is packed once).
			mTiles := ceilDiv(g.M, mr)
			mcTiles := min(gemmMC/mr, mTiles)
			rowBlocks := ceilDiv(mTiles, mcTiles)
			colChunks := 1
			if threads > 1 && rowBlocks < 4*threads {
				colChunks = min(nTiles, ceilDiv(4*threads, rowBlocks))
			}
			tilesPerChunk := ceilDiv(nTiles, colChunks)
			colChunks = ceilDiv(nTiles, tilesPerChunk)
			first := pc == 0 && !g.accumulate
			be.pool.run(rowBlocks*colChunks, func(w, t int) {
				rb, cb := t/colChunks, t%colChunks
				it0, it1 := rb*mcTiles, min(mTiles, (rb+1)*mcTiles)
				jt0, jt1 := cb*tilesPerChunk, min(nTiles, (cb+1)*tilesPerChunk)
				gemmTask(g, mk, &be.gemmScratch[w], bp, kcur, pc, jc, ncur, it0, it1, jt0, jt1, first)
			})
		}
	}
}

// gemmSerial runs g on the calling goroutine with its own scratch (for use
// inside a pool task, e.g. attention per head). packedB must hold at least
// ceil(min(N, gemmNC)/NR)·NR·gemmKC floats.
func gemmSerial(g *gemmArgs, mk *microKernel, s *gemmScratch, packedB []float32) {
	s.ensure(mk)
	mr, nr := mk.mr, mk.nr
	for jc := 0; jc < g.N; jc += gemmNC {
		ncur := min(gemmNC, g.N-jc)
		nTiles := ceilDiv(ncur, nr)
		for pc := 0; pc < g.K; pc += gemmKC {
			kcur := min(gemmKC, g.K-pc)
			bp := packedB[:nTiles*nr*kcur]
			for jt := 0; jt < nTiles; jt++ {
				packB(bp[jt*nr*kcur:][:nr*kcur], &g.b, pc, kcur, jc+jt*nr, min(nr, ncur-jt*nr), nr)
			}
			mTiles := ceilDiv(g.M, mr)
			mcTiles := min(gemmMC/mr, mTiles)
			for it0 := 0; it0 < mTiles; it0 += mcTiles {
				gemmTask(g, mk, s, bp, kcur, pc, jc, ncur, it0, min(mTiles, it0+mcTiles), 0, nTiles, pc == 0 && !g.accumulate)
			}
		}
	}
}

// gemmTask computes the C tiles [it0,it1)×[jt0,jt1) of column block jc for
// depth block pc. first: C is overwritten (set to the bias, or zero, before
// the first depth block).
func gemmTask(g *gemmArgs, mk *microKernel, s *gemmScratch, bp []float32, kcur, pc, jc, ncur, it0, it1, jt0, jt1 int, first bool) {
	mr, nr := mk.mr, mk.nr
	i0 := it0 * mr
	rows := min(g.M, it1*mr) - i0
	ap := s.a[:(it1-it0)*mr*kcur]
	for it := it0; it < it1; it++ {
		packA(ap[(it-it0)*mr*kcur:][:mr*kcur], &g.a, it*mr, min(mr, g.M-it*mr), pc, kcur, mr, g.alpha)
	}
	j0 := jc + jt0*nr
	cols := min(ncur, jt1*nr) - jt0*nr
	if first {
		for i := 0; i < rows; i++ {
			row := g.c[(i0+i)*g.ldc+j0:][:cols]
			if g.bias != nil {
				copy(row, g.bias[j0:][:cols])
			} else {
				clear(row)
			}
		}
	}
	for jt := jt0; jt < jt1; jt++ {
		b := bp[jt*nr*kcur:][:nr*kcur]
		j := jc + jt*nr
		w := min(nr, ncur-jt*nr)
		for it := it0; it < it1; it++ {
			a := ap[(it-it0)*mr*kcur:][:mr*kcur]
			i := it * mr
			h := min(mr, g.M-i)
			if h == mr && w == nr {
				mk.fn(kcur, a, b, g.c[i*g.ldc+j:], g.ldc)
				continue
			}
			// Edge tile: compute into a zeroed buffer, add the valid part.
			tile := s.tile[:mr*nr]
			clear(tile)
			mk.fn(kcur, a, b, tile, nr)
			for r := 0; r < h; r++ {
				crow := g.c[(i+r)*g.ldc+j:][:w]
				trow := tile[r*nr:][:w]
				for q := range crow {
					crow[q] += trow[q]
				}
			}
		}
	}
}

// packA writes rows [i0, i0+h) × depth [p0, p0+k) of alpha·op(A) as k columns
// of mr values (rows past h are zero).
func packA(dst []float32, a *operand, i0, h, p0, k, mr int, alpha float32) {
	dst = dst[:k*mr]
	if !a.trans {
		for i := 0; i < mr; i++ {
			if i >= h {
				for p := 0; p < k; p++ {
					dst[p*mr+i] = 0
				}
				continue
			}
			src := a.x[(i0+i)*a.ld+p0:][:k]
			if alpha == 1 {
				for p, v := range src {
					dst[p*mr+i] = v
				}
			} else {
				for p, v := range src {
					dst[p*mr+i] = alpha * v
				}
			}
		}
		return
	}
	for p := 0; p < k; p++ {
		src := a.x[(p0+p)*a.ld+i0:][:h]
		d := dst[p*mr:][:mr]
		if alpha == 1 {
			copy(d, src)
		} else {
			for i, v := range src {
				d[i] = alpha * v
			}
		}
		clear(d[h:])
	}
}

// packB writes depth [p0, p0+k) × columns [j0, j0+w) of op(B) as k rows of nr
// values (columns past w are zero).
func packB(dst []float32, b *operand, p0, k, j0, w, nr int) {
	dst = dst[:k*nr]
	if !b.trans {
		for p := 0; p < k; p++ {
			d := dst[p*nr:][:nr]
			copy(d, b.x[(p0+p)*b.ld+j0:][:w])
			clear(d[w:])
		}
		return
	}
	for j := 0; j < nr; j++ {
		if j >= w {
			for p := 0; p < k; p++ {
				dst[p*nr+j] = 0
			}
			continue
		}
		src := b.x[(j0+j)*b.ld+p0:][:k]
		for p, v := range src {
			dst[p*nr+j] = v
		}
	}
}
