package cpu

// The GEMM behind every matmul (and attention's score and value products):
// C (M×N, row stride ldc) = or += alpha·op(A)·op(B), a blocked GEMM in the
// BLIS/GotoBLAS mould, with B packed and A read in place where it can be.
//
//	for jc in N step nc:            // column block
//	  for pc in K step kc:          // depth block: fixes each element's summation order
//	    pack B[pc:pc+kc, jc:jc+nc] into NR-wide micro-panels (shared; parallel)
//	    parallel over tasks = (row block of ≤ mc rows) × (chunk of micro-panels):
//	      A: read in place if row-major, else packed into MR-tall panels
//	      for each B micro-panel (kc×NR, stays in L1):
//	        for each MR-row strip of A:
//	          micro-kernel: C[MR×NR] = fma(Σk a[k]⊗b[k], alpha, C)
//
// Every element of C is computed by exactly one micro-kernel call per depth
// block, with a register accumulator that starts at zero and runs k in order,
// then C = fma(acc, alpha, C); so an element's value depends on kc only, never
// on the thread count, the task split or the micro-kernel's tile shape (MR,
// NR). Partial tiles at the edges are computed into a zeroed MR×NR buffer (A
// and B zero-padded) and added with the same fma (vecFmaAcc).
//
// A is read in place when it is row-major (forward and input-gradient
// products, attention): the kernel broadcasts from MR rows through two
// strides, so no transposing copy is made. A transposed A (the weight
// gradient doutᵀ·inp) is packed, a plain copy of MR contiguous values per
// step, which also keeps a huge row stride (V = 50304) away from the kernel.

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

// gemmArgs describes C = alpha·op(A)·op(B) (+ C when accumulate, else + bias).
type gemmArgs struct {
	M, N, K    int
	a, b       operand
	bp         *packedB // op(B) already packed (b is then unused)
	c          []float32
	ldc        int
	alpha      float32
	accumulate bool      // C += product; else C = bias + product
	bias       []float32 // optional (N), broadcast over rows when !accumulate

	// Causal structure (attention), relative to diag: lowerC: only elements
	// with column ≤ diag + row are needed (tiles wholly above are skipped and
	// left as they were); lowerA: op(A)(i, k) = 0 for k > diag + i; upperA:
	// op(A)(i, k) = 0 for k < i - diag. The zero steps are skipped, which
	// changes no result: they would add exact zeros.
	lowerC, lowerA, upperA bool
	diag                   int
}

// microKernel computes, on one MR×NR tile, c[i*ldc+j] = fma(Σ_p
// a[i*rs+p*ps]·b[p*bs+j], alpha, c[i*ldc+j]) for p < k.
type microKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a []float32, rs, ps int, b []float32, bs int, c []float32, ldc int, alpha float32)
}

// Which operands the kernels read in place rather than from packed panels
// (variables so benchmarks can compare). Measured on the GPT shapes (Sapphire
// Rapids, AVX-512 kernel): reading a transposed A in place costs 5-15%, so it
// is packed; reading a row-major B in place wins up to 20% on the small
// shapes (row stride ≤ 512 floats) and loses 10-20% on the large ones.
var (
	directTransA = false // A transposed: MR contiguous values per step, row stride lda
	directB      = true  // B row-major: NR contiguous values per step, row stride ldb
	directBMaxLD = 512   // ... when ldb is at most this
)

// gemmScratch is one worker's packing buffer for A and an edge tile.
type gemmScratch struct {
	a    []float32
	tile []float32
}

func (s *gemmScratch) ensure(mk *microKernel) {
	if n := (gemmMC + mk.mr) * gemmKC; len(s.a) < n {
		s.a = alignedFloats(n)
	}
	if n := mk.mr * mk.nr; len(s.tile) < n {
		s.tile = alignedFloats(n)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// packedB is op(B) (K×N, N ≤ gemmNC) packed whole, for operands that several
// GEMMs share (attention packs K and V once per head): depth block pc holds
// ceil(N/NR) panels of min(kc, K-pc)×NR at p[pc*nPad + jt*NR*min(kc, K-pc)],
// nPad = ceil(N/NR)·NR. A GEMM may use a leading part of it (K' ≤ K, N' ≤ N).
type packedB struct {
	p    []float32
	K, N int
}

// packBSize is the length of a packedB of K×N.
func packBSize(K, N, nr int) int { return K * ceilDiv(N, nr) * nr }

// packBAll packs op(b) (K×N) into dst (packBSize floats).
func packBAll(dst []float32, b operand, K, N, nr int) packedB {
	nPad := ceilDiv(N, nr) * nr
	for pc := 0; pc < K; pc += gemmKC {
		kcur := min(gemmKC, K-pc)
		for jt := 0; jt*nr < N; jt++ {
			packB(dst[pc*nPad+jt*nr*kcur:][:nr*kcur], &b, pc, kcur, jt*nr, min(nr, N-jt*nr), nr)
		}
	}
	return packedB{p: dst[:K*nPad], K: K, N: N}
}

// panels returns depth block pc of a packedB: the panel base and stride.
func (pb *packedB) panels(pc, nr int) ([]float32, int) {
	nPad := ceilDiv(pb.N, nr) * nr
	kfull := min(gemmKC, pb.K-pc)
	return pb.p[pc*nPad:], kfull * nr
}

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
			if g.directB() {
				// Only a partial last panel is packed (zero-padded).
				if jt := nTiles - 1; ncur-jt*nr < nr {
					packB(bp[jt*nr*kcur:][:nr*kcur], &g.b, pc, kcur, jc+jt*nr, ncur-jt*nr, nr)
				}
			} else {
				// Pack B: tasks of up to 8 micro-panels.
				const panelsPerTask = 8
				be.pool.run(ceilDiv(nTiles, panelsPerTask), func(_, t int) {
					for jt := t * panelsPerTask; jt < min(nTiles, (t+1)*panelsPerTask); jt++ {
						packB(bp[jt*nr*kcur:][:nr*kcur], &g.b, pc, kcur, jc+jt*nr, min(nr, ncur-jt*nr), nr)
					}
				})
			}
			// Tasks: about 4 per thread, splitting rows first (a task packs
			// its own A, so column chunks repeat that work), then columns.
			mTiles := ceilDiv(g.M, mr)
			mcTiles := min(gemmMC/mr, mTiles)
			colChunks := 1
			if target := 4 * threads; threads > 1 && ceilDiv(mTiles, mcTiles) < target {
				mcTiles = max(1, ceilDiv(mTiles, target))
				if rb := ceilDiv(mTiles, mcTiles); rb < target {
					colChunks = min(nTiles, ceilDiv(target, rb))
				}
			}
			rowBlocks := ceilDiv(mTiles, mcTiles)
			tilesPerChunk := ceilDiv(nTiles, colChunks)
			colChunks = ceilDiv(nTiles, tilesPerChunk)
			first := pc == 0 && !g.accumulate
			be.pool.run(rowBlocks*colChunks, func(w, t int) {
				rb, cb := t/colChunks, t%colChunks
				it0, it1 := rb*mcTiles, min(mTiles, (rb+1)*mcTiles)
				jt0, jt1 := cb*tilesPerChunk, min(nTiles, (cb+1)*tilesPerChunk)
				gemmTask(g, mk, &be.gemmScratch[w], bp, nr*kcur, kcur, pc, jc, ncur, it0, it1, jt0, jt1, first)
			})
		}
	}
}

// gemmSerial runs g on the calling goroutine with its own scratch (for use
// inside a pool task, e.g. attention per head). Unless g.bp is set, packed
// must hold ceil(min(N, gemmNC)/NR)·NR·gemmKC floats.
func gemmSerial(g *gemmArgs, mk *microKernel, s *gemmScratch, packed []float32) {
	s.ensure(mk)
	mr, nr := mk.mr, mk.nr
	for jc := 0; jc < g.N; jc += gemmNC {
		ncur := min(gemmNC, g.N-jc)
		nTiles := ceilDiv(ncur, nr)
		for pc := 0; pc < g.K; pc += gemmKC {
			kcur := min(gemmKC, g.K-pc)
			var bp []float32
			var stride int
			if g.bp != nil {
				if jc != 0 || g.K > g.bp.K || g.N > g.bp.N {
					panic("kernels/cpu: GEMM larger than its packed B")
				}
				bp, stride = g.bp.panels(pc, nr)
			} else {
				bp, stride = packed[:nTiles*nr*kcur], nr*kcur
				for jt := 0; jt < nTiles; jt++ {
					if w := min(nr, ncur-jt*nr); !g.directB() || w < nr {
						packB(bp[jt*stride:][:stride], &g.b, pc, kcur, jc+jt*nr, w, nr)
					}
				}
			}
			mTiles := ceilDiv(g.M, mr)
			mcTiles := min(gemmMC/mr, mTiles)
			for it0 := 0; it0 < mTiles; it0 += mcTiles {
				gemmTask(g, mk, s, bp, stride, kcur, pc, jc, ncur, it0, min(mTiles, it0+mcTiles), 0, nTiles, pc == 0 && !g.accumulate)
			}
		}
	}
}

// directB reports whether full B panels are read in place.
func (g *gemmArgs) directB() bool {
	return directB && !g.b.trans && g.bp == nil && g.b.ld <= directBMaxLD
}

// gemmTask computes the C tiles [it0,it1)×[jt0,jt1) of column block jc for
// depth block pc; B panel jt is bp[jt*stride:] (its first kcur rows). first:
// C is overwritten (set to the bias, or zero, before the first depth block).
func gemmTask(g *gemmArgs, mk *microKernel, s *gemmScratch, bp []float32, stride, kcur, pc, jc, ncur, it0, it1, jt0, jt1 int, first bool) {
	mr, nr := mk.mr, mk.nr
	i0 := it0 * mr
	rows := min(g.M, it1*mr) - i0
	// A strips: in place (row-major A, full strips), or packed into s.a at
	// strip (it-it0) (transposed A, and a partial last strip).
	var ap []float32
	packedA := g.a.trans && !directTransA
	if packedA {
		ap = s.a[:(it1-it0)*mr*kcur]
		for it := it0; it < it1; it++ {
			packA(ap[(it-it0)*mr*kcur:][:mr*kcur], &g.a, it*mr, min(mr, g.M-it*mr), pc, kcur, mr)
		}
	} else if last := it1 - 1; min(mr, g.M-last*mr) < mr {
		ap = s.a[:(it1-it0)*mr*kcur]
		packA(ap[(last-it0)*mr*kcur:][:mr*kcur], &g.a, last*mr, g.M-last*mr, pc, kcur, mr)
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
	dB := g.directB()
	for jt := jt0; jt < jt1; jt++ {
		j := jc + jt*nr
		w := min(nr, ncur-jt*nr)
		b, bs := bp[jt*stride:][:nr*kcur], nr
		if dB && w == nr {
			b, bs = g.b.x[pc*g.b.ld+j:], g.b.ld
		}
		for it := it0; it < it1; it++ {
			i := it * mr
			h := min(mr, g.M-i)
			if g.lowerC && j > g.diag+i+h-1 {
				continue
			}
			// The strip's nonzero depth range within this block: [k0, k1).
			k0, k1 := 0, kcur
			if g.lowerA {
				k1 = min(k1, g.diag+i+h-pc)
			}
			if g.upperA {
				k0 = max(k0, i-g.diag-pc)
			}
			if k1 <= k0 {
				continue
			}
			var a []float32
			var rs, ps int
			switch {
			case packedA || h < mr:
				a, rs, ps = ap[(it-it0)*mr*kcur:], 1, mr
			case g.a.trans:
				a, rs, ps = g.a.x[pc*g.a.ld+i:], 1, g.a.ld
			default:
				a, rs, ps = g.a.x[i*g.a.ld+pc:], g.a.ld, 1
			}
			a, bk := a[k0*ps:], b[k0*bs:]
			if h == mr && w == nr {
				mk.fn(k1-k0, a, rs, ps, bk, bs, g.c[i*g.ldc+j:], g.ldc, g.alpha)
				continue
			}
			// Edge tile: compute into a zeroed buffer, add the valid part.
			tile := s.tile[:mr*nr]
			clear(tile)
			mk.fn(k1-k0, a, rs, ps, bk, bs, tile, nr, 1)
			for r := 0; r < h; r++ {
				vecFmaAcc(g.c[(i+r)*g.ldc+j:][:w], tile[r*nr:][:w], g.alpha)
			}
		}
	}
}

// packA writes rows [i0, i0+h) × depth [p0, p0+k) of op(A) as k columns of mr
// values (rows past h are zero).
func packA(dst []float32, a *operand, i0, h, p0, k, mr int) {
	dst = dst[:k*mr]
	if a.trans {
		packCopy(dst, mr, a.x[p0*a.ld+i0:], a.ld, k, h, mr)
	} else {
		packTranspose(dst, mr, a.x[i0*a.ld+p0:], a.ld, h, k)
		for i := h; i < mr; i++ {
			for p := 0; p < k; p++ {
				dst[p*mr+i] = 0
			}
		}
	}
}

// packB writes depth [p0, p0+k) × columns [j0, j0+w) of op(B) as k rows of nr
// values (columns past w are zero).
func packB(dst []float32, b *operand, p0, k, j0, w, nr int) {
	dst = dst[:k*nr]
	if !b.trans {
		packCopy(dst, nr, b.x[p0*b.ld+j0:], b.ld, k, w, nr)
		return
	}
	packTranspose(dst, nr, b.x[j0*b.ld+p0:], b.ld, w, k)
	for j := w; j < nr; j++ {
		for p := 0; p < k; p++ {
			dst[p*nr+j] = 0
		}
	}
}

// packCopyGo: for p < k, dst[p*ldd:][:width] = src[p*lds:][:w] then zeros.
func packCopyGo(dst []float32, ldd int, src []float32, lds, k, w, width int) {
	for p := 0; p < k; p++ {
		d := dst[p*ldd:][:width]
		copy(d, src[p*lds:][:w])
		clear(d[w:])
	}
}

// packTransposeGo: dst[p*ldd+j] = src[j*lds+p] for j < rows, p < k.
func packTransposeGo(dst []float32, ldd int, src []float32, lds, rows, k int) {
	for j := 0; j < rows; j++ {
		for p, v := range src[j*lds:][:k] {
			dst[p*ldd+j] = v
		}
	}
}
