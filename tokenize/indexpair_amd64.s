//go:build amd64 && !noasm && gc

#include "textflag.h"

// func indexPairAVX2(p *byte, n int, a, b byte) int
//
// Y0 is a in every byte, Y1 b; at each step the 32 bytes at p+DX against a and the
// 32 at p+DX+1 against b: a bit of their AND is a position that holds the pair.
TEXT ·indexPairAVX2(SB), NOSPLIT, $0-32
	MOVQ         p+0(FP), SI
	MOVQ         n+8(FP), CX
	VPBROADCASTB a+16(FP), Y0 // from memory: no legacy-SSE move into an XMM register
	VPBROADCASTB b+17(FP), Y1
	XORQ         DX, DX

loop:
	CMPQ      DX, CX
	JAE       none
	VPCMPEQB  (SI)(DX*1), Y0, Y2
	VPCMPEQB  1(SI)(DX*1), Y1, Y3
	VPAND     Y2, Y3, Y2
	VPMOVMSKB Y2, R8
	TESTL     R8, R8
	JNZ       found
	ADDQ      $32, DX
	JMP       loop

found:
	BSFL R8, R8
	ADDQ R8, DX
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

none:
	MOVQ $-1, ret+24(FP)
	VZEROUPPER
	RET
