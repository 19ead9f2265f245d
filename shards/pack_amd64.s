//go:build amd64 && !noasm && gc

#include "textflag.h"

// func packUint16AVX2(dst *byte, src *int32, n int) (or uint32)
//
// 16 ids per step: VPACKUSDW packs two vectors of 8 int32 into 16 uint16 (saturated,
// which changes nothing for ids that fit; the OR tells those that do not), in the
// order a0-3 b0-3 a4-7 b4-7, which VPERMQ $0xD8 puts right.
TEXT ·packUint16AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VPXOR Y7, Y7, Y7
	XORQ AX, AX

packLoop:
	CMPQ AX, CX
	JGE  packDone
	VMOVDQU (SI)(AX*4), Y0
	VMOVDQU 32(SI)(AX*4), Y1
	VPOR Y0, Y7, Y7
	VPOR Y1, Y7, Y7
	VPACKUSDW Y1, Y0, Y2
	VPERMQ $0xD8, Y2, Y2
	VMOVDQU Y2, (DI)(AX*2)
	ADDQ $16, AX
	JMP  packLoop

packDone:
	VEXTRACTI128 $1, Y7, X6
	VPOR X6, X7, X7
	VPSHUFD $0x4E, X7, X6
	VPOR X6, X7, X7
	VPSHUFD $0xB1, X7, X6
	VPOR X6, X7, X7
	VMOVD X7, AX
	VZEROUPPER
	MOVL AX, or+24(FP)
	RET
