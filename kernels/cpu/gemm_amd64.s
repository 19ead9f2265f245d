//go:build amd64 && !noasm && gc

#include "textflag.h"

// The GEMM micro-kernels (see gemm.go and the stubs in gemm_amd64.go):
// c[MR×NR] (row stride ldc floats) += Σ_p a[p·MR+i]·b[p·NR+j] over k steps,
// where a and b are packed panels. Each element has one register accumulator,
// zeroed at the start and updated by one FMA per step in p order; at the end
// C += accumulator. Rows are broadcast from a, columns are vectors from b.

// ---- AVX2/FMA, MR=6, NR=16: Y0..Y11 accumulate (row i in Y(2i), Y(2i+1)),
// Y12/Y13 hold b[p, 0:16], Y14 the broadcast a[p, i].

#define AVX2_ROW(off, acc0, acc1) \
	VBROADCASTSS off(AX), Y14 \
	VFMADD231PS  Y12, Y14, acc0 \
	VFMADD231PS  Y13, Y14, acc1

#define AVX2_STEP(aoff, boff) \
	VMOVUPS boff(BX), Y12 \
	VMOVUPS boff+32(BX), Y13 \
	AVX2_ROW(aoff, Y0, Y1) \
	AVX2_ROW(aoff+4, Y2, Y3) \
	AVX2_ROW(aoff+8, Y4, Y5) \
	AVX2_ROW(aoff+12, Y6, Y7) \
	AVX2_ROW(aoff+16, Y8, Y9) \
	AVX2_ROW(aoff+20, Y10, Y11)

#define AVX2_STORE(acc0, acc1) \
	VADDPS  (DI), acc0, acc0 \
	VMOVUPS acc0, (DI) \
	VADDPS  32(DI), acc1, acc1 \
	VMOVUPS acc1, 32(DI) \
	ADDQ    SI, DI

// func gemmKernelAVX2(k int, a, b, c *float32, ldc int)
TEXT ·gemmKernelAVX2(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   avx2_tail

avx2_loop2:
	AVX2_STEP(0, 0)
	AVX2_STEP(24, 64)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ DX
	JNZ  avx2_loop2

avx2_tail:
	ANDQ $1, CX
	JZ   avx2_store
	AVX2_STEP(0, 0)

avx2_store:
	AVX2_STORE(Y0, Y1)
	AVX2_STORE(Y2, Y3)
	AVX2_STORE(Y4, Y5)
	AVX2_STORE(Y6, Y7)
	AVX2_STORE(Y8, Y9)
	AVX2_STORE(Y10, Y11)
	VZEROUPPER
	RET

// ---- AVX-512, MR=12, NR=32: Z0..Z23 accumulate (row i in Z(2i), Z(2i+1)),
// Z24/Z25 hold b[p, 0:32], Z26 the broadcast a[p, i].

#define Z_ROW(off, acc0, acc1) \
	VBROADCASTSS off(AX), Z26 \
	VFMADD231PS  Z24, Z26, acc0 \
	VFMADD231PS  Z25, Z26, acc1

#define Z_STEP(aoff, boff) \
	VMOVUPS boff(BX), Z24 \
	VMOVUPS boff+64(BX), Z25 \
	Z_ROW(aoff, Z0, Z1) \
	Z_ROW(aoff+4, Z2, Z3) \
	Z_ROW(aoff+8, Z4, Z5) \
	Z_ROW(aoff+12, Z6, Z7) \
	Z_ROW(aoff+16, Z8, Z9) \
	Z_ROW(aoff+20, Z10, Z11) \
	Z_ROW(aoff+24, Z12, Z13) \
	Z_ROW(aoff+28, Z14, Z15) \
	Z_ROW(aoff+32, Z16, Z17) \
	Z_ROW(aoff+36, Z18, Z19) \
	Z_ROW(aoff+40, Z20, Z21) \
	Z_ROW(aoff+44, Z22, Z23)

#define Z_STORE(acc0, acc1) \
	VADDPS  (DI), acc0, acc0 \
	VMOVUPS acc0, (DI) \
	VADDPS  64(DI), acc1, acc1 \
	VMOVUPS acc1, 64(DI) \
	ADDQ    SI, DI

#define Z_PREFETCH_ROW \
	PREFETCHT0 (DI) \
	PREFETCHT0 64(DI) \
	ADDQ       SI, DI

// func gemmKernelAVX512(k int, a, b, c *float32, ldc int)
TEXT ·gemmKernelAVX512(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	MOVQ DI, R8
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	Z_PREFETCH_ROW
	MOVQ R8, DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   z_tail

z_loop2:
	Z_STEP(0, 0)
	Z_STEP(48, 128)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ DX
	JNZ  z_loop2

z_tail:
	ANDQ $1, CX
	JZ   z_store
	Z_STEP(0, 0)

z_store:
	Z_STORE(Z0, Z1)
	Z_STORE(Z2, Z3)
	Z_STORE(Z4, Z5)
	Z_STORE(Z6, Z7)
	Z_STORE(Z8, Z9)
	Z_STORE(Z10, Z11)
	Z_STORE(Z12, Z13)
	Z_STORE(Z14, Z15)
	Z_STORE(Z16, Z17)
	Z_STORE(Z18, Z19)
	Z_STORE(Z20, Z21)
	Z_STORE(Z22, Z23)
	VZEROUPPER
	RET
