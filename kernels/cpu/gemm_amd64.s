//go:build amd64 && !noasm && gc

#include "textflag.h"

// The GEMM micro-kernels (see gemm.go and the stubs in gemm_amd64.go):
//
//	c[i·ldc+j] = fma(Σ_p a[i·rs + p·ps]·b[p·bs+j], alpha, c[i·ldc+j])
//
// for i < MR, j < NR, where a is read through two strides (rs between rows,
// ps between steps: a row-major matrix has rs = lda, ps = 1, a transposed one
// rs = 1, ps = lda, a packed panel rs = 1, ps = MR) and b through one (a
// packed panel has bs = NR, a row-major matrix bs = ldb). Each element has one
// register accumulator, zeroed at the start and updated by one FMA per step
// in p order; rows are broadcast from a, columns are vectors from b.
//
// Rows of a are addressed from three bases, so no register per row is
// needed: with L = rs bytes and L3 = 3L, rows 0-4 are A0 + {0, L, 2L, L3, 4L},
// rows 5-9 the same from A1 = A0 + 5L, rows 10-11 from A2 = A0 + 10L. Each
// step adds ps bytes to the bases.

// ---- AVX2/FMA, MR=6, NR=16: Y0..Y11 accumulate (row i in Y(2i), Y(2i+1)),
// Y12/Y13 hold b[p, 0:16], Y14 the broadcast a[p, i].

#define AVX2_ROW(addr, acc0, acc1) \
	VBROADCASTSS addr, Y14 \
	VFMADD231PS  Y12, Y14, acc0 \
	VFMADD231PS  Y13, Y14, acc1

#define AVX2_STEP \
	VMOVUPS (BX), Y12 \
	VMOVUPS 32(BX), Y13 \
	AVX2_ROW((AX), Y0, Y1) \
	AVX2_ROW((AX)(R8*1), Y2, Y3) \
	AVX2_ROW((AX)(R8*2), Y4, Y5) \
	AVX2_ROW((AX)(R9*1), Y6, Y7) \
	AVX2_ROW((AX)(R8*4), Y8, Y9) \
	AVX2_ROW((R10), Y10, Y11) \
	ADDQ R13, BX \
	ADDQ R11, AX \
	ADDQ R11, R10

#define AVX2_STORE(acc0, acc1) \
	VFMADD213PS (DI), Y15, acc0 \
	VMOVUPS     acc0, (DI) \
	VFMADD213PS 32(DI), Y15, acc1 \
	VMOVUPS     acc1, 32(DI) \
	ADDQ        SI, DI

// func gemmKernelAVX2(k int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32)
TEXT ·gemmKernelAVX2(SB), NOSPLIT, $0-68
	MOVQ         k+0(FP), CX
	MOVQ         a+8(FP), AX
	MOVQ         rs+16(FP), R8
	MOVQ         ps+24(FP), R11
	MOVQ         b+32(FP), BX
	MOVQ         bs+40(FP), R13
	MOVQ         c+48(FP), DI
	MOVQ         ldc+56(FP), SI
	VBROADCASTSS alpha+64(FP), Y15
	SHLQ         $2, SI
	SHLQ         $2, R8
	SHLQ         $2, R11
	SHLQ         $2, R13
	LEAQ         (R8)(R8*2), R9
	LEAQ         (R8)(R8*4), R10
	ADDQ         AX, R10
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	MOVQ         CX, DX
	SHRQ         $1, DX
	JZ           avx2_tail

avx2_loop2:
	AVX2_STEP
	AVX2_STEP
	DECQ DX
	JNZ  avx2_loop2

avx2_tail:
	ANDQ $1, CX
	JZ   avx2_store
	AVX2_STEP

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
// Z24/Z25 hold b[p, 0:32], Z26 the broadcast a[p, i], Z27 alpha.

#define Z_ROW(addr, acc0, acc1) \
	VBROADCASTSS addr, Z26 \
	VFMADD231PS  Z24, Z26, acc0 \
	VFMADD231PS  Z25, Z26, acc1

#define Z_STEP \
	VMOVUPS (BX), Z24 \
	VMOVUPS 64(BX), Z25 \
	Z_ROW((AX), Z0, Z1) \
	Z_ROW((AX)(R8*1), Z2, Z3) \
	Z_ROW((AX)(R8*2), Z4, Z5) \
	Z_ROW((AX)(R9*1), Z6, Z7) \
	Z_ROW((AX)(R8*4), Z8, Z9) \
	Z_ROW((R10), Z10, Z11) \
	Z_ROW((R10)(R8*1), Z12, Z13) \
	Z_ROW((R10)(R8*2), Z14, Z15) \
	Z_ROW((R10)(R9*1), Z16, Z17) \
	Z_ROW((R10)(R8*4), Z18, Z19) \
	Z_ROW((R12), Z20, Z21) \
	Z_ROW((R12)(R8*1), Z22, Z23) \
	ADDQ R13, BX \
	ADDQ R11, AX \
	ADDQ R11, R10 \
	ADDQ R11, R12

#define Z_STORE(acc0, acc1) \
	VFMADD213PS (DI), Z27, acc0 \
	VMOVUPS     acc0, (DI) \
	VFMADD213PS 64(DI), Z27, acc1 \
	VMOVUPS     acc1, 64(DI) \
	ADDQ        SI, DI

#define Z_PREFETCH_ROW \
	PREFETCHT0 (DX) \
	PREFETCHT0 64(DX) \
	ADDQ       SI, DX

// func gemmKernelAVX512(k int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32)
TEXT ·gemmKernelAVX512(SB), NOSPLIT, $0-68
	MOVQ         k+0(FP), CX
	MOVQ         a+8(FP), AX
	MOVQ         rs+16(FP), R8
	MOVQ         ps+24(FP), R11
	MOVQ         b+32(FP), BX
	MOVQ         bs+40(FP), R13
	MOVQ         c+48(FP), DI
	MOVQ         ldc+56(FP), SI
	VBROADCASTSS alpha+64(FP), Z27
	SHLQ         $2, SI
	SHLQ         $2, R8
	SHLQ         $2, R11
	SHLQ         $2, R13
	LEAQ         (R8)(R8*2), R9
	LEAQ         (R8)(R8*4), R10
	LEAQ         (R10)(R10*1), R12
	ADDQ         AX, R10
	ADDQ         AX, R12
	MOVQ         DI, DX
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
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPXORD       Z8, Z8, Z8
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z13, Z13, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	VPXORD       Z16, Z16, Z16
	VPXORD       Z17, Z17, Z17
	VPXORD       Z18, Z18, Z18
	VPXORD       Z19, Z19, Z19
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23
	MOVQ         CX, DX
	SHRQ         $1, DX
	JZ           z_tail

z_loop2:
	Z_STEP
	Z_STEP
	DECQ DX
	JNZ  z_loop2

z_tail:
	ANDQ $1, CX
	JZ   z_store
	Z_STEP

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

// func vecFmaAccAVX2(c, t *float32, n int, alpha float32)
// c = fma(t, alpha, c): an edge tile's rows added with the kernels' epilogue
// arithmetic.
TEXT ·vecFmaAccAVX2(SB), NOSPLIT, $0-28
	MOVQ         c+0(FP), DI
	MOVQ         t+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y14

fa_loop8:
	CMPQ        CX, $8
	JL          fa_tail
	VMOVUPS     (SI), Y0
	VFMADD213PS (DI), Y14, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         fa_loop8

fa_tail:
	TESTQ       CX, CX
	JZ          fa_done
	MOVQ        $8, R9
	SUBQ        CX, R9
	LEAQ        gemmTailMask<>(SB), R10
	VMOVDQU     (R10)(R9*4), Y15
	VMASKMOVPS  (SI), Y15, Y0
	VMASKMOVPS  (DI), Y15, Y1
	VFMADD213PS Y1, Y14, Y0
	VMASKMOVPS  Y0, Y15, (DI)

fa_done:
	VZEROUPPER
	RET

DATA gemmTailMask<>+0(SB)/4, $0xffffffff
DATA gemmTailMask<>+4(SB)/4, $0xffffffff
DATA gemmTailMask<>+8(SB)/4, $0xffffffff
DATA gemmTailMask<>+12(SB)/4, $0xffffffff
DATA gemmTailMask<>+16(SB)/4, $0xffffffff
DATA gemmTailMask<>+20(SB)/4, $0xffffffff
DATA gemmTailMask<>+24(SB)/4, $0xffffffff
DATA gemmTailMask<>+28(SB)/4, $0xffffffff
DATA gemmTailMask<>+32(SB)/4, $0
DATA gemmTailMask<>+36(SB)/4, $0
DATA gemmTailMask<>+40(SB)/4, $0
DATA gemmTailMask<>+44(SB)/4, $0
DATA gemmTailMask<>+48(SB)/4, $0
DATA gemmTailMask<>+52(SB)/4, $0
DATA gemmTailMask<>+56(SB)/4, $0
DATA gemmTailMask<>+60(SB)/4, $0
GLOBL gemmTailMask<>(SB), RODATA|NOPTR, $64

// func copyColsAVX2(dst, src *float32, ldd, lds, k, loadLanes, storeLanes int)
// For p < k: dst[p·ldd + i] = src[p·lds + i] for i < loadLanes, 0 for
// loadLanes ≤ i < storeLanes (0 ≤ loadLanes ≤ storeLanes ≤ 8). Packing's
// copy of up to 8 contiguous values per step, as masked loads and stores.
TEXT ·copyColsAVX2(SB), NOSPLIT, $0-56
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    ldd+16(FP), DX
	MOVQ    lds+24(FP), R8
	MOVQ    k+32(FP), CX
	SHLQ    $2, DX
	SHLQ    $2, R8
	LEAQ    gemmTailMask<>(SB), R10
	MOVQ    $8, R9
	SUBQ    loadLanes+40(FP), R9
	VMOVDQU (R10)(R9*4), Y14
	MOVQ    $8, R9
	SUBQ    storeLanes+48(FP), R9
	VMOVDQU (R10)(R9*4), Y15
	TESTQ   CX, CX
	JZ      cc_done

cc_loop:
	VMASKMOVPS (SI), Y14, Y0
	VMASKMOVPS Y0, Y15, (DI)
	ADDQ       R8, SI
	ADDQ       DX, DI
	DECQ       CX
	JNZ        cc_loop

cc_done:
	VZEROUPPER
	RET

// func transpose8AVX2(dst *float32, ldd int, src *float32, lds, blocks int)
// For 8 source rows and 8·blocks columns: dst[p·ldd + j] = src[j·lds + p]
// (j < 8, p < 8·blocks): 8×8 register transposes (unpack, shuffle, permute).
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	MOVQ blocks+32(FP), CX
	SHLQ $2, DX
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9      // 3·lds
	LEAQ (SI)(R8*4), R10     // row 4
	LEAQ (DX)(DX*2), R11     // 3·ldd
	TESTQ CX, CX
	JZ   tr_done

tr_loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R8*1), Y5
	VMOVUPS (R10)(R8*2), Y6
	VMOVUPS (R10)(R9*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(DX*1)
	VMOVUPS Y10, (DI)(DX*2)
	VMOVUPS Y11, (DI)(R11*1)
	LEAQ    (DI)(DX*4), DI
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, (DI)(DX*1)
	VMOVUPS Y14, (DI)(DX*2)
	VMOVUPS Y15, (DI)(R11*1)
	LEAQ    (DI)(DX*4), DI
	ADDQ    $32, SI
	ADDQ    $32, R10
	DECQ    CX
	JNZ     tr_loop

tr_done:
	VZEROUPPER
	RET

// func copyCols16AVX512(dst, src *float32, ldd, lds, k int, loadMask, storeMask uint16)
// copyColsAVX2 on 16 lanes with AVX-512 mask registers: for p < k, the lanes
// of loadMask are copied from src+p·lds, the other lanes of storeMask get 0.
TEXT ·copyCols16AVX512(SB), NOSPLIT, $0-44
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    ldd+16(FP), DX
	MOVQ    lds+24(FP), R8
	MOVQ    k+32(FP), CX
	MOVWLZX loadMask+40(FP), AX
	KMOVW   AX, K1
	MOVWLZX storeMask+42(FP), AX
	KMOVW   AX, K2
	SHLQ    $2, DX
	SHLQ    $2, R8
	MOVQ    CX, R9
	SHRQ    $1, R9
	JZ      c16_tail

c16_loop2:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (SI)(R8*1), K1, Z1
	VMOVUPS   Z0, K2, (DI)
	VMOVUPS   Z1, K2, (DI)(DX*1)
	LEAQ      (SI)(R8*2), SI
	LEAQ      (DI)(DX*2), DI
	DECQ      R9
	JNZ       c16_loop2

c16_tail:
	ANDQ      $1, CX
	JZ        c16_done
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS   Z0, K2, (DI)

c16_done:
	VZEROUPPER
	RET
