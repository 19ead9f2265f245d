//go:build amd64 && !noasm && gc

#include "textflag.h"

// The ring's reductions on 8 floats at a time (AVX2); the Go wrappers in
// add_amd64.go do the tails. Each lane computes what add and addDiv in
// reduce.go compute, in the same order, so the bits are the same.

// func addAVX2(dst, in *float32, n int): dst[i] = in[i] + dst[i], n a multiple of 8.
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ n+16(FP), CX

add32:
	CMPQ    CX, $32
	JL      add8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     add32

add8:
	CMPQ    CX, $8
	JL      addDone
	VMOVUPS (SI), Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     add8

addDone:
	VZEROUPPER
	RET

// func addDivAVX2(dst, in *float32, n int, w float32): dst[i] = (in[i] + dst[i]) / w,
// n a multiple of 8.
TEXT ·addDivAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS w+24(FP), Y7

div8:
	CMPQ    CX, $8
	JL      divDone
	VMOVUPS (SI), Y0
	VADDPS  (DI), Y0, Y0
	VDIVPS  Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     div8

divDone:
	VZEROUPPER
	RET
