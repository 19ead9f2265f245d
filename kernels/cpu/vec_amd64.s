//go:build amd64 && !noasm && gc

#include "textflag.h"

// Vector loops for the ops (AVX2 + FMA, 8 floats per step). Each function's
// Go twin is in vec.go or layernorm.go (same name without the AVX2 suffix,
// ending in Go); the stubs are in vec_amd64.go. Tails shorter than 8 use
// masked loads and stores (VMASKMOVPS), so no access leaves the slices.

// Constants, each replicated 8 times (one ymm).

DATA expHi<>+0(SB)/4, $0x42b0c0a5
DATA expHi<>+4(SB)/4, $0x42b0c0a5
DATA expHi<>+8(SB)/4, $0x42b0c0a5
DATA expHi<>+12(SB)/4, $0x42b0c0a5
DATA expHi<>+16(SB)/4, $0x42b0c0a5
DATA expHi<>+20(SB)/4, $0x42b0c0a5
DATA expHi<>+24(SB)/4, $0x42b0c0a5
DATA expHi<>+28(SB)/4, $0x42b0c0a5
GLOBL expHi<>(SB), RODATA|NOPTR, $32

DATA expLo<>+0(SB)/4, $0xc2b0c0a5
DATA expLo<>+4(SB)/4, $0xc2b0c0a5
DATA expLo<>+8(SB)/4, $0xc2b0c0a5
DATA expLo<>+12(SB)/4, $0xc2b0c0a5
DATA expLo<>+16(SB)/4, $0xc2b0c0a5
DATA expLo<>+20(SB)/4, $0xc2b0c0a5
DATA expLo<>+24(SB)/4, $0xc2b0c0a5
DATA expLo<>+28(SB)/4, $0xc2b0c0a5
GLOBL expLo<>(SB), RODATA|NOPTR, $32

DATA log2e<>+0(SB)/4, $0x3fb8aa3b
DATA log2e<>+4(SB)/4, $0x3fb8aa3b
DATA log2e<>+8(SB)/4, $0x3fb8aa3b
DATA log2e<>+12(SB)/4, $0x3fb8aa3b
DATA log2e<>+16(SB)/4, $0x3fb8aa3b
DATA log2e<>+20(SB)/4, $0x3fb8aa3b
DATA log2e<>+24(SB)/4, $0x3fb8aa3b
DATA log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL log2e<>(SB), RODATA|NOPTR, $32

DATA half<>+0(SB)/4, $0x3f000000
DATA half<>+4(SB)/4, $0x3f000000
DATA half<>+8(SB)/4, $0x3f000000
DATA half<>+12(SB)/4, $0x3f000000
DATA half<>+16(SB)/4, $0x3f000000
DATA half<>+20(SB)/4, $0x3f000000
DATA half<>+24(SB)/4, $0x3f000000
DATA half<>+28(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $32

DATA expC1<>+0(SB)/4, $0x3f318000
DATA expC1<>+4(SB)/4, $0x3f318000
DATA expC1<>+8(SB)/4, $0x3f318000
DATA expC1<>+12(SB)/4, $0x3f318000
DATA expC1<>+16(SB)/4, $0x3f318000
DATA expC1<>+20(SB)/4, $0x3f318000
DATA expC1<>+24(SB)/4, $0x3f318000
DATA expC1<>+28(SB)/4, $0x3f318000
GLOBL expC1<>(SB), RODATA|NOPTR, $32

DATA expC2<>+0(SB)/4, $0xb95e8083
DATA expC2<>+4(SB)/4, $0xb95e8083
DATA expC2<>+8(SB)/4, $0xb95e8083
DATA expC2<>+12(SB)/4, $0xb95e8083
DATA expC2<>+16(SB)/4, $0xb95e8083
DATA expC2<>+20(SB)/4, $0xb95e8083
DATA expC2<>+24(SB)/4, $0xb95e8083
DATA expC2<>+28(SB)/4, $0xb95e8083
GLOBL expC2<>(SB), RODATA|NOPTR, $32

DATA expP0<>+0(SB)/4, $0x39506967
DATA expP0<>+4(SB)/4, $0x39506967
DATA expP0<>+8(SB)/4, $0x39506967
DATA expP0<>+12(SB)/4, $0x39506967
DATA expP0<>+16(SB)/4, $0x39506967
DATA expP0<>+20(SB)/4, $0x39506967
DATA expP0<>+24(SB)/4, $0x39506967
DATA expP0<>+28(SB)/4, $0x39506967
GLOBL expP0<>(SB), RODATA|NOPTR, $32

DATA expP1<>+0(SB)/4, $0x3ab743ce
DATA expP1<>+4(SB)/4, $0x3ab743ce
DATA expP1<>+8(SB)/4, $0x3ab743ce
DATA expP1<>+12(SB)/4, $0x3ab743ce
DATA expP1<>+16(SB)/4, $0x3ab743ce
DATA expP1<>+20(SB)/4, $0x3ab743ce
DATA expP1<>+24(SB)/4, $0x3ab743ce
DATA expP1<>+28(SB)/4, $0x3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/4, $0x3c088908
DATA expP2<>+4(SB)/4, $0x3c088908
DATA expP2<>+8(SB)/4, $0x3c088908
DATA expP2<>+12(SB)/4, $0x3c088908
DATA expP2<>+16(SB)/4, $0x3c088908
DATA expP2<>+20(SB)/4, $0x3c088908
DATA expP2<>+24(SB)/4, $0x3c088908
DATA expP2<>+28(SB)/4, $0x3c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/4, $0x3d2aa9c1
DATA expP3<>+4(SB)/4, $0x3d2aa9c1
DATA expP3<>+8(SB)/4, $0x3d2aa9c1
DATA expP3<>+12(SB)/4, $0x3d2aa9c1
DATA expP3<>+16(SB)/4, $0x3d2aa9c1
DATA expP3<>+20(SB)/4, $0x3d2aa9c1
DATA expP3<>+24(SB)/4, $0x3d2aa9c1
DATA expP3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/4, $0x3e2aaaaa
DATA expP4<>+4(SB)/4, $0x3e2aaaaa
DATA expP4<>+8(SB)/4, $0x3e2aaaaa
DATA expP4<>+12(SB)/4, $0x3e2aaaaa
DATA expP4<>+16(SB)/4, $0x3e2aaaaa
DATA expP4<>+20(SB)/4, $0x3e2aaaaa
DATA expP4<>+24(SB)/4, $0x3e2aaaaa
DATA expP4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/4, $0x3f000000
DATA expP5<>+4(SB)/4, $0x3f000000
DATA expP5<>+8(SB)/4, $0x3f000000
DATA expP5<>+12(SB)/4, $0x3f000000
DATA expP5<>+16(SB)/4, $0x3f000000
DATA expP5<>+20(SB)/4, $0x3f000000
DATA expP5<>+24(SB)/4, $0x3f000000
DATA expP5<>+28(SB)/4, $0x3f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $32

DATA negInf<>+0(SB)/4, $0xff800000
DATA negInf<>+4(SB)/4, $0xff800000
DATA negInf<>+8(SB)/4, $0xff800000
DATA negInf<>+12(SB)/4, $0xff800000
DATA negInf<>+16(SB)/4, $0xff800000
DATA negInf<>+20(SB)/4, $0xff800000
DATA negInf<>+24(SB)/4, $0xff800000
DATA negInf<>+28(SB)/4, $0xff800000
GLOBL negInf<>(SB), RODATA|NOPTR, $32

DATA geluM2K<>+0(SB)/4, $0xbfcc422a
DATA geluM2K<>+4(SB)/4, $0xbfcc422a
DATA geluM2K<>+8(SB)/4, $0xbfcc422a
DATA geluM2K<>+12(SB)/4, $0xbfcc422a
DATA geluM2K<>+16(SB)/4, $0xbfcc422a
DATA geluM2K<>+20(SB)/4, $0xbfcc422a
DATA geluM2K<>+24(SB)/4, $0xbfcc422a
DATA geluM2K<>+28(SB)/4, $0xbfcc422a
GLOBL geluM2K<>(SB), RODATA|NOPTR, $32

DATA geluM2K2<>+0(SB)/4, $0xbd922279
DATA geluM2K2<>+4(SB)/4, $0xbd922279
DATA geluM2K2<>+8(SB)/4, $0xbd922279
DATA geluM2K2<>+12(SB)/4, $0xbd922279
DATA geluM2K2<>+16(SB)/4, $0xbd922279
DATA geluM2K2<>+20(SB)/4, $0xbd922279
DATA geluM2K2<>+24(SB)/4, $0xbd922279
DATA geluM2K2<>+28(SB)/4, $0xbd922279
GLOBL geluM2K2<>(SB), RODATA|NOPTR, $32

DATA geluK<>+0(SB)/4, $0x3f4c422a
DATA geluK<>+4(SB)/4, $0x3f4c422a
DATA geluK<>+8(SB)/4, $0x3f4c422a
DATA geluK<>+12(SB)/4, $0x3f4c422a
DATA geluK<>+16(SB)/4, $0x3f4c422a
DATA geluK<>+20(SB)/4, $0x3f4c422a
DATA geluK<>+24(SB)/4, $0x3f4c422a
DATA geluK<>+28(SB)/4, $0x3f4c422a
GLOBL geluK<>(SB), RODATA|NOPTR, $32

DATA geluK3<>+0(SB)/4, $0x3ddb33b6
DATA geluK3<>+4(SB)/4, $0x3ddb33b6
DATA geluK3<>+8(SB)/4, $0x3ddb33b6
DATA geluK3<>+12(SB)/4, $0x3ddb33b6
DATA geluK3<>+16(SB)/4, $0x3ddb33b6
DATA geluK3<>+20(SB)/4, $0x3ddb33b6
DATA geluK3<>+24(SB)/4, $0x3ddb33b6
DATA geluK3<>+28(SB)/4, $0x3ddb33b6
GLOBL geluK3<>(SB), RODATA|NOPTR, $32

DATA int127<>+0(SB)/4, $0x0000007f
DATA int127<>+4(SB)/4, $0x0000007f
DATA int127<>+8(SB)/4, $0x0000007f
DATA int127<>+12(SB)/4, $0x0000007f
DATA int127<>+16(SB)/4, $0x0000007f
DATA int127<>+20(SB)/4, $0x0000007f
DATA int127<>+24(SB)/4, $0x0000007f
DATA int127<>+28(SB)/4, $0x0000007f
GLOBL int127<>(SB), RODATA|NOPTR, $32

// tailMask: 8 lanes of ones then 8 of zeros; 8-r lanes in, the first r are set.
DATA tailMask<>+0(SB)/4, $0xffffffff
DATA tailMask<>+4(SB)/4, $0xffffffff
DATA tailMask<>+8(SB)/4, $0xffffffff
DATA tailMask<>+12(SB)/4, $0xffffffff
DATA tailMask<>+16(SB)/4, $0xffffffff
DATA tailMask<>+20(SB)/4, $0xffffffff
DATA tailMask<>+24(SB)/4, $0xffffffff
DATA tailMask<>+28(SB)/4, $0xffffffff
DATA tailMask<>+32(SB)/4, $0x00000000
DATA tailMask<>+36(SB)/4, $0x00000000
DATA tailMask<>+40(SB)/4, $0x00000000
DATA tailMask<>+44(SB)/4, $0x00000000
DATA tailMask<>+48(SB)/4, $0x00000000
DATA tailMask<>+52(SB)/4, $0x00000000
DATA tailMask<>+56(SB)/4, $0x00000000
DATA tailMask<>+60(SB)/4, $0x00000000
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// TAILMASK sets mask to the lanes [0, CX) (1 ≤ CX ≤ 7). Clobbers R9, R10.
#define TAILMASK(mask) \
	MOVQ    $8, R9 \
	SUBQ    CX, R9 \
	LEAQ    tailMask<>(SB), R10 \
	VMOVDQU (R10)(R9*4), mask

// HSUM leaves the sum of the 8 lanes of Y(r) in X(r) lane 0; clobbers X(t).
#define HSUM(y, x, t) \
	VEXTRACTF128 $1, y, t \
	VADDPS       t, x, x \
	VMOVHLPS     x, x, t \
	VADDPS       t, x, x \
	VMOVSHDUP    x, t \
	VADDSS       t, x, x

// HMAX: as HSUM with max.
#define HMAX(y, x, t) \
	VEXTRACTF128 $1, y, t \
	VMAXPS       t, x, x \
	VMOVHLPS     x, x, t \
	VMAXPS       t, x, x \
	VMOVSHDUP    x, t \
	VMAXSS       t, x, x

// EXP: x = exp(x) on 8 lanes (Cephes expf: x clamped to ±88.376, n =
// floor(x·log2e + ½), r = x - n·ln2 in two parts, a degree-5 polynomial,
// scaled by 2ⁿ built in the exponent bits; results below about 2⁻¹²⁶ are 0).
// Relative error about 2 ulp. Clobbers n and p.
#define EXP(x, n, p) \
	VMINPS       expHi<>(SB), x, x \
	VMAXPS       expLo<>(SB), x, x \
	VMOVUPS      half<>(SB), n \
	VFMADD231PS  log2e<>(SB), x, n \
	VROUNDPS     $1, n, n \
	VFNMADD231PS expC1<>(SB), n, x \
	VFNMADD231PS expC2<>(SB), n, x \
	VMOVUPS      expP0<>(SB), p \
	VFMADD213PS  expP1<>(SB), x, p \
	VFMADD213PS  expP2<>(SB), x, p \
	VFMADD213PS  expP3<>(SB), x, p \
	VFMADD213PS  expP4<>(SB), x, p \
	VFMADD213PS  expP5<>(SB), x, p \
	VFMADD213PS  one<>(SB), x, p \
	VFMADD213PS  one<>(SB), x, p \
	VCVTPS2DQ    n, n \
	VPADDD       int127<>(SB), n, n \
	VPSLLD       $23, n, n \
	VMULPS       n, p, x

// func vecAddAVX2(out, a, b *float32, n int)
TEXT ·vecAddAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX

add_loop32:
	CMPQ    CX, $32
	JL      add_loop8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     add_loop32

add_loop8:
	CMPQ    CX, $8
	JL      add_tail
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     add_loop8

add_tail:
	TESTQ      CX, CX
	JZ         add_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

add_done:
	VZEROUPPER
	RET

// func vecAccAVX2(dst, src *float32, n int)
TEXT ·vecAccAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

acc_loop32:
	CMPQ    CX, $32
	JL      acc_loop8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     acc_loop32

acc_loop8:
	CMPQ    CX, $8
	JL      acc_tail
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     acc_loop8

acc_tail:
	TESTQ      CX, CX
	JZ         acc_done
	TAILMASK(Y15)
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

acc_done:
	VZEROUPPER
	RET

// func vecScaleAVX2(x *float32, n int, s float32)
TEXT ·vecScaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS s+16(FP), Y14

scale_loop8:
	CMPQ    CX, $8
	JL      scale_tail
	VMULPS  (DI), Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     scale_loop8

scale_tail:
	TESTQ      CX, CX
	JZ         scale_done
	TAILMASK(Y15)
	VMASKMOVPS (DI), Y15, Y0
	VMULPS     Y14, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

scale_done:
	VZEROUPPER
	RET

// func vecAxpyAVX2(y, x *float32, n int, a float32)
// y += a·x, as a multiply then an add (no fusion), like the Go loop.
TEXT ·vecAxpyAVX2(SB), NOSPLIT, $0-28
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS a+24(FP), Y14

axpy_loop8:
	CMPQ    CX, $8
	JL      axpy_tail
	VMULPS  (SI), Y14, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     axpy_loop8

axpy_tail:
	TESTQ      CX, CX
	JZ         axpy_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DI), Y15, Y1
	VMULPS     Y14, Y0, Y0
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

axpy_done:
	VZEROUPPER
	RET

// func vecMaxAVX2(x *float32, n int) float32
TEXT ·vecMaxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS negInf<>(SB), Y0
	VMOVUPS Y0, Y1

max_loop16:
	CMPQ   CX, $16
	JL     max_loop8
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	ADDQ   $64, SI
	SUBQ   $16, CX
	JMP    max_loop16

max_loop8:
	CMPQ   CX, $8
	JL     max_tail
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX

max_tail:
	TESTQ      CX, CX
	JZ         max_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y2
	VANDNPS    negInf<>(SB), Y15, Y3
	VORPS      Y3, Y2, Y2
	VMAXPS     Y2, Y1, Y1

max_done:
	VMAXPS Y1, Y0, Y0
	HMAX(Y0, X0, X1)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func vecSumAVX2(x *float32, n int) float32
TEXT ·vecSumAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

sum_loop16:
	CMPQ   CX, $16
	JL     sum_loop8
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	ADDQ   $64, SI
	SUBQ   $16, CX
	JMP    sum_loop16

sum_loop8:
	CMPQ   CX, $8
	JL     sum_tail
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX

sum_tail:
	TESTQ      CX, CX
	JZ         sum_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y2
	VADDPS     Y2, Y1, Y1

sum_done:
	VADDPS Y1, Y0, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

dot_loop16:
	CMPQ        CX, $16
	JL          dot_loop8
	VMOVUPS     (SI), Y2
	VMOVUPS     32(SI), Y3
	VFMADD231PS (DX), Y2, Y0
	VFMADD231PS 32(DX), Y3, Y1
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         dot_loop16

dot_loop8:
	CMPQ        CX, $8
	JL          dot_tail
	VMOVUPS     (SI), Y2
	VFMADD231PS (DX), Y2, Y0
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX

dot_tail:
	TESTQ       CX, CX
	JZ          dot_done
	TAILMASK(Y15)
	VMASKMOVPS  (SI), Y15, Y2
	VMASKMOVPS  (DX), Y15, Y3
	VFMADD231PS Y3, Y2, Y1

dot_done:
	VADDPS Y1, Y0, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func expShiftAVX2(x *float32, n int, m float32) float32
// x[i] = exp(x[i] - m); returns the sum (8 lane sums, then HSUM).
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y14
	VXORPS       Y12, Y12, Y12
	VXORPS       Y13, Y13, Y13

exps_loop16:
	CMPQ    CX, $16
	JL      exps_loop8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y3
	VSUBPS  Y14, Y0, Y0
	VSUBPS  Y14, Y3, Y3
	EXP(Y0, Y1, Y2)
	EXP(Y3, Y4, Y5)
	VMOVUPS Y0, (DI)
	VMOVUPS Y3, 32(DI)
	VADDPS  Y0, Y12, Y12
	VADDPS  Y3, Y13, Y13
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     exps_loop16

exps_loop8:
	CMPQ    CX, $8
	JL      exps_tail
	VMOVUPS (DI), Y0
	VSUBPS  Y14, Y0, Y0
	EXP(Y0, Y1, Y2)
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y12, Y12
	ADDQ    $32, DI
	SUBQ    $8, CX

exps_tail:
	TESTQ      CX, CX
	JZ         exps_done
	TAILMASK(Y15)
	VMASKMOVPS (DI), Y15, Y0
	VSUBPS     Y14, Y0, Y0
	EXP(Y0, Y1, Y2)
	VANDPS     Y15, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
	VADDPS     Y0, Y13, Y13

exps_done:
	VADDPS Y13, Y12, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func softmaxBackwardAVX2(d, p *float32, n int, dot float32)
// d = p·(d - dot).
TEXT ·softmaxBackwardAVX2(SB), NOSPLIT, $0-28
	MOVQ         d+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS dot+24(FP), Y14

smb_loop8:
	CMPQ    CX, $8
	JL      smb_tail
	VMOVUPS (DI), Y0
	VSUBPS  Y14, Y0, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     smb_loop8

smb_tail:
	TESTQ      CX, CX
	JZ         smb_done
	TAILMASK(Y15)
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VSUBPS     Y14, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

smb_done:
	VZEROUPPER
	RET

// GELU_FWD: x (in) → y = x / (1 + exp(-2u)), u = √(2/π)(x + 0.044715x³):
// the tanh form, since ½(1 + tanh u) = 1/(1 + e^{-2u}). Clobbers t, n, p.
#define GELU_FWD(x, y, t, n, p) \
	VMULPS      x, x, t \
	VMOVUPS     geluM2K2<>(SB), y \
	VFMADD213PS geluM2K<>(SB), t, y \
	VMULPS      x, y, y \
	EXP(y, n, p) \
	VADDPS      one<>(SB), y, y \
	VDIVPS      y, x, y

// func geluForwardAVX2(out, inp *float32, n int)
TEXT ·geluForwardAVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ n+16(FP), CX

gf_loop16:
	CMPQ    CX, $16
	JL      gf_loop8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y5
	GELU_FWD(Y0, Y1, Y2, Y3, Y4)
	GELU_FWD(Y5, Y6, Y7, Y8, Y9)
	VMOVUPS Y1, (DI)
	VMOVUPS Y6, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     gf_loop16

gf_loop8:
	CMPQ    CX, $8
	JL      gf_tail
	VMOVUPS (SI), Y0
	GELU_FWD(Y0, Y1, Y2, Y3, Y4)
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX

gf_tail:
	TESTQ      CX, CX
	JZ         gf_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	GELU_FWD(Y0, Y1, Y2, Y3, Y4)
	VMASKMOVPS Y1, Y15, (DI)

gf_done:
	VZEROUPPER
	RET

// GELU_BWD: x (in), d (dout, in) → g = gelu'(x)·d, with s = 1/(1 + e^{-2u}):
// gelu'(x) = s·(1 + 2x(1-s)u'), u' = √(2/π)(1 + 3·0.044715x²).
// Clobbers t, n, p, s.
#define GELU_BWD(x, d, g, t, n, p, s) \
	VMULPS       x, x, t \
	VMOVUPS      geluM2K2<>(SB), g \
	VFMADD213PS  geluM2K<>(SB), t, g \
	VMULPS       x, g, g \
	EXP(g, n, p) \
	VADDPS       one<>(SB), g, g \
	VMOVUPS      one<>(SB), s \
	VDIVPS       g, s, s \
	VMOVUPS      geluK3<>(SB), g \
	VFMADD213PS  geluK<>(SB), t, g \
	VADDPS       x, x, t \
	VMULPS       t, g, g \
	VMOVUPS      one<>(SB), t \
	VSUBPS       s, t, t \
	VMULPS       t, g, g \
	VADDPS       one<>(SB), g, g \
	VMULPS       s, g, g \
	VMULPS       d, g, g

// func geluBackwardAVX2(dinp, inp, dout *float32, n int)
// dinp += gelu'(inp)·dout.
TEXT ·geluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ dout+16(FP), DX
	MOVQ n+24(FP), CX

gb_loop8:
	CMPQ    CX, $8
	JL      gb_tail
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	GELU_BWD(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VADDPS  (DI), Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     gb_loop8

gb_tail:
	TESTQ      CX, CX
	JZ         gb_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	GELU_BWD(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMASKMOVPS (DI), Y15, Y7
	VADDPS     Y7, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)

gb_done:
	VZEROUPPER
	RET

// func geluGradMulAVX2(d, pre *float32, n int)
// d = gelu'(pre)·d in place (the GELU's backward fused onto a matmul's input gradient).
TEXT ·geluGradMulAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ pre+8(FP), SI
	MOVQ n+16(FP), CX

gm_loop8:
	CMPQ    CX, $8
	JL      gm_tail
	VMOVUPS (SI), Y0
	VMOVUPS (DI), Y1
	GELU_BWD(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     gm_loop8

gm_tail:
	TESTQ      CX, CX
	JZ         gm_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DI), Y15, Y1
	GELU_BWD(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMASKMOVPS Y2, Y15, (DI)

gm_done:
	VZEROUPPER
	RET

// func sumSquaresAVX2(x *float32, n int) float64
// Σx² in float64: lanes of 4 doubles, FMA, two accumulators; the tail adds
// one element at a time to a third.
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD X4, X4, X4

ss_loop8:
	CMPQ        CX, $8
	JL          ss_tail
	VCVTPS2PD   (SI), Y2
	VCVTPS2PD   16(SI), Y3
	VFMADD231PD Y2, Y2, Y0
	VFMADD231PD Y3, Y3, Y1
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         ss_loop8

ss_tail:
	TESTQ       CX, CX
	JZ          ss_done
	VCVTSS2SD   (SI), X2, X2
	VFMADD231SD X2, X2, X4
	ADDQ        $4, SI
	DECQ        CX
	JMP         ss_tail

ss_done:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VUNPCKHPD    X0, X0, X1
	VADDSD       X1, X0, X0
	VADDSD       X4, X0, X0
	VMOVSD       X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumDiffsAVX2(x *float32, n int, m float32) (s, s2 float32)
// Σ(x-m) and Σ(x-m)².
TEXT ·sumDiffsAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y14
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1

sd_loop8:
	CMPQ        CX, $8
	JL          sd_tail
	VMOVUPS     (SI), Y2
	VSUBPS      Y14, Y2, Y2
	VADDPS      Y2, Y0, Y0
	VFMADD231PS Y2, Y2, Y1
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         sd_loop8

sd_tail:
	TESTQ       CX, CX
	JZ          sd_done
	TAILMASK(Y15)
	VMASKMOVPS  (SI), Y15, Y2
	VSUBPS      Y14, Y2, Y2
	VANDPS      Y15, Y2, Y2
	VADDPS      Y2, Y0, Y0
	VFMADD231PS Y2, Y2, Y1

sd_done:
	HSUM(Y0, X0, X2)
	HSUM(Y1, X1, X2)
	VMOVSS X0, s+24(FP)
	VMOVSS X1, s2+28(FP)
	VZEROUPPER
	RET

// func lnNormalizeAVX2(out, x, w, b *float32, n int, m, rs float32)
// out = (x-m)·rs·w + b; b == nil means no bias.
TEXT ·lnNormalizeAVX2(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         b+24(FP), R8
	MOVQ         n+32(FP), CX
	VBROADCASTSS m+40(FP), Y13
	VBROADCASTSS rs+44(FP), Y14
	TESTQ        R8, R8
	JZ           lnn_nobias

lnn_loop8:
	CMPQ        CX, $8
	JL          lnn_tail
	VMOVUPS     (SI), Y0
	VSUBPS      Y13, Y0, Y0
	VMULPS      Y14, Y0, Y0
	VMULPS      (DX), Y0, Y0
	VADDPS      (R8), Y0, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, R8
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         lnn_loop8

lnn_tail:
	TESTQ      CX, CX
	JZ         lnn_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	VMASKMOVPS (R8), Y15, Y2
	VSUBPS     Y13, Y0, Y0
	VMULPS     Y14, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VADDPS     Y2, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
	JMP        lnn_done

lnn_nobias:
	CMPQ    CX, $8
	JL      lnn_nobias_tail
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	VMULPS  Y14, Y0, Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     lnn_nobias

lnn_nobias_tail:
	TESTQ      CX, CX
	JZ         lnn_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	VSUBPS     Y13, Y0, Y0
	VMULPS     Y14, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

lnn_done:
	VZEROUPPER
	RET

// func lnBackwardSumsAVX2(dout, x, w *float32, n int, m, rs float32) (dn, dnNorm float32)
// dn = Σ w·dout, dnNorm = Σ w·dout·(x-m)·rs.
TEXT ·lnBackwardSumsAVX2(SB), NOSPLIT, $0-48
	MOVQ         dout+0(FP), DX
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), R8
	MOVQ         n+24(FP), CX
	VBROADCASTSS m+32(FP), Y13
	VBROADCASTSS rs+36(FP), Y14
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1

lbs_loop8:
	CMPQ        CX, $8
	JL          lbs_tail
	VMOVUPS     (DX), Y2
	VMULPS      (R8), Y2, Y2
	VMOVUPS     (SI), Y3
	VSUBPS      Y13, Y3, Y3
	VMULPS      Y14, Y3, Y3
	VADDPS      Y2, Y0, Y0
	VFMADD231PS Y3, Y2, Y1
	ADDQ        $32, DX
	ADDQ        $32, SI
	ADDQ        $32, R8
	SUBQ        $8, CX
	JMP         lbs_loop8

lbs_tail:
	TESTQ       CX, CX
	JZ          lbs_done
	TAILMASK(Y15)
	VMASKMOVPS  (DX), Y15, Y2
	VMASKMOVPS  (R8), Y15, Y4
	VMULPS      Y4, Y2, Y2
	VMASKMOVPS  (SI), Y15, Y3
	VSUBPS      Y13, Y3, Y3
	VMULPS      Y14, Y3, Y3
	VADDPS      Y2, Y0, Y0
	VFMADD231PS Y3, Y2, Y1

lbs_done:
	HSUM(Y0, X0, X2)
	HSUM(Y1, X1, X2)
	VMOVSS X0, dn+40(FP)
	VMOVSS X1, dnNorm+44(FP)
	VZEROUPPER
	RET

// func lnBackwardApplyAVX2(dinp, dw, db, dout, x, w *float32, n int, m, rs, dnMean, dnNormMean float32)
// norm = (x-m)·rs; db += dout; dw += norm·dout;
// dinp += (w·dout - dnMean - norm·dnNormMean)·rs.
TEXT ·lnBackwardApplyAVX2(SB), NOSPLIT, $0-72
	MOVQ         dinp+0(FP), DI
	MOVQ         dw+8(FP), R11
	MOVQ         db+16(FP), R12
	MOVQ         dout+24(FP), DX
	MOVQ         x+32(FP), SI
	MOVQ         w+40(FP), R8
	MOVQ         n+48(FP), CX
	VBROADCASTSS m+56(FP), Y10
	VBROADCASTSS rs+60(FP), Y11
	VBROADCASTSS dnMean+64(FP), Y12
	VBROADCASTSS dnNormMean+68(FP), Y13
	XORQ         AX, AX

lba_loop8:
	CMPQ         CX, $8
	JL           lba_tail
	VMOVUPS      (DX)(AX*4), Y0
	VMOVUPS      (SI)(AX*4), Y1
	VSUBPS       Y10, Y1, Y1
	VMULPS       Y11, Y1, Y1
	VADDPS       (R12)(AX*4), Y0, Y2
	VMOVUPS      Y2, (R12)(AX*4)
	VMOVUPS      (R11)(AX*4), Y2
	VFMADD231PS  Y0, Y1, Y2
	VMOVUPS      Y2, (R11)(AX*4)
	VMULPS       (R8)(AX*4), Y0, Y0
	VSUBPS       Y12, Y0, Y0
	VFNMADD231PS Y13, Y1, Y0
	VMOVUPS      (DI)(AX*4), Y2
	VFMADD231PS  Y11, Y0, Y2
	VMOVUPS      Y2, (DI)(AX*4)
	ADDQ         $8, AX
	SUBQ         $8, CX
	JMP          lba_loop8

lba_tail:
	TESTQ        CX, CX
	JZ           lba_done
	LEAQ         (DX)(AX*4), DX
	LEAQ         (SI)(AX*4), SI
	LEAQ         (R12)(AX*4), R12
	LEAQ         (R11)(AX*4), R11
	LEAQ         (R8)(AX*4), R8
	LEAQ         (DI)(AX*4), DI
	TAILMASK(Y15)
	VMASKMOVPS   (DX), Y15, Y0
	VMASKMOVPS   (SI), Y15, Y1
	VSUBPS       Y10, Y1, Y1
	VMULPS       Y11, Y1, Y1
	VMASKMOVPS   (R12), Y15, Y2
	VADDPS       Y0, Y2, Y2
	VMASKMOVPS   Y2, Y15, (R12)
	VMASKMOVPS   (R11), Y15, Y2
	VFMADD231PS  Y0, Y1, Y2
	VMASKMOVPS   Y2, Y15, (R11)
	VMASKMOVPS   (R8), Y15, Y3
	VMULPS       Y3, Y0, Y0
	VSUBPS       Y12, Y0, Y0
	VFNMADD231PS Y13, Y1, Y0
	VMASKMOVPS   (DI), Y15, Y2
	VFMADD231PS  Y11, Y0, Y2
	VMASKMOVPS   Y2, Y15, (DI)

lba_done:
	VZEROUPPER
	RET

// func adamwAVX2(p, grads, m, v *float32, n int, c *adamConsts)
// The float32 arithmetic of adamwGo, operation for operation (no fusion).
TEXT ·adamwAVX2(SB), NOSPLIT, $0-48
	MOVQ         p+0(FP), DI
	MOVQ         grads+8(FP), SI
	MOVQ         m+16(FP), DX
	MOVQ         v+24(FP), R8
	MOVQ         n+32(FP), CX
	MOVQ         c+40(FP), AX
	VBROADCASTSS 0(AX), Y6   // lr
	VBROADCASTSS 4(AX), Y7   // b1
	VBROADCASTSS 8(AX), Y8   // b2
	VBROADCASTSS 12(AX), Y9  // eps
	VBROADCASTSS 16(AX), Y10 // wd
	VBROADCASTSS 20(AX), Y11 // bc1
	VBROADCASTSS 24(AX), Y12 // bc2
	VBROADCASTSS 28(AX), Y13 // 1-b1
	VBROADCASTSS 32(AX), Y14 // 1-b2

adam_loop8:
	CMPQ    CX, $8
	JL      adam_tail
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y7, Y1
	VMULPS  Y0, Y13, Y2
	VADDPS  Y2, Y1, Y1
	VMOVUPS Y1, (DX)
	VMULPS  (R8), Y8, Y2
	VMULPS  Y0, Y14, Y3
	VMULPS  Y0, Y3, Y3
	VADDPS  Y3, Y2, Y2
	VMOVUPS Y2, (R8)
	VDIVPS  Y11, Y1, Y1
	VDIVPS  Y12, Y2, Y2
	VSQRTPS Y2, Y2
	VADDPS  Y9, Y2, Y2
	VDIVPS  Y2, Y1, Y1
	VMOVUPS (DI), Y4
	VMULPS  Y4, Y10, Y5
	VADDPS  Y5, Y1, Y1
	VMULPS  Y1, Y6, Y1
	VSUBPS  Y1, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	SUBQ    $8, CX
	JMP     adam_loop8

adam_tail:
	TESTQ      CX, CX
	JZ         adam_done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	VMULPS     Y1, Y7, Y1
	VMULPS     Y0, Y13, Y2
	VADDPS     Y2, Y1, Y1
	VMASKMOVPS Y1, Y15, (DX)
	VMASKMOVPS (R8), Y15, Y2
	VMULPS     Y2, Y8, Y2
	VMULPS     Y0, Y14, Y3
	VMULPS     Y0, Y3, Y3
	VADDPS     Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (R8)
	VDIVPS     Y11, Y1, Y1
	VDIVPS     Y12, Y2, Y2
	VSQRTPS    Y2, Y2
	VADDPS     Y9, Y2, Y2
	VDIVPS     Y2, Y1, Y1
	VMASKMOVPS (DI), Y15, Y4
	VMULPS     Y4, Y10, Y5
	VADDPS     Y5, Y1, Y1
	VMULPS     Y1, Y6, Y1
	VSUBPS     Y1, Y4, Y4
	VMASKMOVPS Y4, Y15, (DI)

adam_done:
	VZEROUPPER
	RET
