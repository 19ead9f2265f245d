//go:build amd64 && !noasm && gc

package cpu

import "golang.org/x/sys/cpu"

// gemmKernelAVX2 is the AVX2/FMA micro-kernel on a 6×16 tile: the loop of
// gemmKernelGo (gemm_kernel.go) with MR=6, NR=16 and fused multiply-adds:
//
//	for i := 0; i < 6; i++ {
//		for j := 0; j < 16; j++ {
//			var acc float32
//			for p := 0; p < k; p++ {
//				acc = fma(a[i*rs+p*ps], b[p*bs+j], acc)
//			}
//			c[i*ldc+j] = fma(acc, alpha, c[i*ldc+j])
//		}
//	}
//
//go:noescape
func gemmKernelAVX2(k int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32)

// gemmKernelAVX512 is the same loop on a 12×32 tile with AVX-512 registers
// (MR=12, NR=32).
//
//go:noescape
func gemmKernelAVX512(k int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32)

// vecFmaAccAVX2 is vecFmaAccGo with c = fma(t, alpha, c), the kernels'
// epilogue arithmetic, for edge tiles.
//
//go:noescape
func vecFmaAccAVX2(c, t *float32, n int, alpha float32)

// kernelCall checks that a k-step call on an mr×nr tile stays inside a, b and c.
func kernelCall(mr, nr, k int, a []float32, rs, ps int, b []float32, bs int, c []float32, ldc int) {
	if k < 1 || len(a) <= (mr-1)*rs+(k-1)*ps || len(b) < (k-1)*bs+nr || len(c) < (mr-1)*ldc+nr {
		panic("kernels/cpu: micro-kernel operands out of range")
	}
}

var avx2Kernel = microKernel{name: "avx2", mr: 6, nr: 16, fn: func(k int, a []float32, rs, ps int, b []float32, bs int, c []float32, ldc int, alpha float32) {
	kernelCall(6, 16, k, a, rs, ps, b, bs, c, ldc)
	gemmKernelAVX2(k, &a[0], rs, ps, &b[0], bs, &c[0], ldc, alpha)
}}

var avx512Kernel = microKernel{name: "avx512", mr: 12, nr: 32, fn: func(k int, a []float32, rs, ps int, b []float32, bs int, c []float32, ldc int, alpha float32) {
	kernelCall(12, 32, k, a, rs, ps, b, bs, c, ldc)
	gemmKernelAVX512(k, &a[0], rs, ps, &b[0], bs, &c[0], ldc, alpha)
}}

func vecFmaAcc(c, t []float32, alpha float32) {
	if !hasAVX2 {
		vecFmaAccGo(c, t, alpha)
		return
	}
	need(len(c), t)
	vecFmaAccAVX2(ptr(c), ptr(t), len(c), alpha)
}

// copyColsAVX2: for p < k, dst[p*ldd+i] = src[p*lds+i] for i < loadLanes
// and 0 for loadLanes ≤ i < storeLanes (packCopyGo on one 8-lane column).
//
//go:noescape
func copyColsAVX2(dst, src *float32, ldd, lds, k, loadLanes, storeLanes int)

// transpose8AVX2: dst[p*ldd+j] = src[j*lds+p] for j < 8, p < 8·blocks
// (packTransposeGo on 8 rows, in 8×8 blocks).
//
//go:noescape
func transpose8AVX2(dst *float32, ldd int, src *float32, lds, blocks int)

// copyCols16AVX512 is copyColsAVX2 on 16 lanes, with lane masks.
//
//go:noescape
func copyCols16AVX512(dst, src *float32, ldd, lds, k int, loadMask, storeMask uint16)

func packCopy(dst []float32, ldd int, src []float32, lds, k, w, width int) {
	if hasAVX512 && k > 0 {
		if len(dst) < (k-1)*ldd+width || (w > 0 && len(src) < (k-1)*lds+w) {
			panic("kernels/cpu: pack operands out of range")
		}
		for i := 0; i < width; i += 16 {
			store := min(16, width-i)
			load := min(store, max(0, w-i))
			s := &dst[i] // not read when every lane is masked off
			if load > 0 {
				s = &src[i]
			}
			copyCols16AVX512(&dst[i], s, ldd, lds, k, uint16(1<<load-1), uint16(1<<store-1))
		}
		return
	}
	if !hasAVX2 || k == 0 {
		packCopyGo(dst, ldd, src, lds, k, w, width)
		return
	}
	if len(dst) < (k-1)*ldd+width || (w > 0 && len(src) < (k-1)*lds+w) {
		panic("kernels/cpu: pack operands out of range")
	}
	for i := 0; i < width; i += 8 {
		store := min(8, width-i)
		load := min(store, max(0, w-i))
		s := &dst[i] // not read when every lane is masked off
		if load > 0 {
			s = &src[i]
		}
		copyColsAVX2(&dst[i], s, ldd, lds, k, load, store)
	}
}

func packTranspose(dst []float32, ldd int, src []float32, lds, rows, k int) {
	if !hasAVX2 || rows < 8 || k < 8 {
		packTransposeGo(dst, ldd, src, lds, rows, k)
		return
	}
	if len(dst) < (k-1)*ldd+rows || len(src) < (rows-1)*lds+k {
		panic("kernels/cpu: pack operands out of range")
	}
	k8 := k / 8 * 8
	j := 0
	for ; j+8 <= rows; j += 8 {
		transpose8AVX2(&dst[j], ldd, &src[j*lds], lds, k8/8)
		if k8 < k {
			packTransposeGo(dst[k8*ldd+j:], ldd, src[j*lds+k8:], lds, 8, k-k8)
		}
	}
	if j < rows {
		packTransposeGo(dst[j:], ldd, src[j*lds:], lds, rows-j, k)
	}
}

var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ
)

// selectKernel picks the widest micro-kernel the CPU runs.
func selectKernel() microKernel {
	switch {
	case hasAVX512:
		return avx512Kernel
	case hasAVX2:
		return avx2Kernel
	}
	return goKernel
}

// kernelsAvailable lists the micro-kernels this machine can run (tests and
// benchmarks compare them).
func kernelsAvailable() []microKernel {
	ks := []microKernel{goKernel}
	if hasAVX2 {
		ks = append(ks, avx2Kernel)
	}
	if hasAVX512 {
		ks = append(ks, avx512Kernel)
	}
	return ks
}
