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
//				acc = fma(a[p*6+i], b[p*16+j], acc)
//			}
//			c[i*ldc+j] += acc
//		}
//	}
//
//go:noescape
func gemmKernelAVX2(k int, a, b, c *float32, ldc int)

// gemmKernelAVX512 is the same loop on a 12×32 tile with AVX-512 registers
// (MR=12, NR=32).
//
//go:noescape
func gemmKernelAVX512(k int, a, b, c *float32, ldc int)

var avx2Kernel = microKernel{name: "avx2", mr: 6, nr: 16, fn: func(k int, a, b, c []float32, ldc int) {
	_, _, _ = a[k*6-1], b[k*16-1], c[5*ldc+15]
	gemmKernelAVX2(k, &a[0], &b[0], &c[0], ldc)
}}

var avx512Kernel = microKernel{name: "avx512", mr: 12, nr: 32, fn: func(k int, a, b, c []float32, ldc int) {
	_, _, _ = a[k*12-1], b[k*32-1], c[11*ldc+31]
	gemmKernelAVX512(k, &a[0], &b[0], &c[0], ldc)
}}

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
