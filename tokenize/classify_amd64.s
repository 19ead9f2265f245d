//go:build amd64 && !noasm && gc

#include "textflag.h"

// classifyBlocksAVX2: the masks of classifyBlocksGo (classify.go), 32 bytes per step. A
// byte b is a letter when (b|0x20)-'a' ≤ 25, a digit when b-'0' ≤ 9, a space when b == ' '
// or b-'\t' ≤ 4 (unsigned comparisons done as min(x, k) == x); bytes ≥ 0x80 fail all
// three, and VPMOVMSKB of the bytes themselves marks them. Each 32-bit mask is stored
// straight into its half of the block's word (little-endian: the first 32 bytes are
// the low half).

// CLASSIFY32 classifies the 32 bytes at off(SI) into the block at DI, half h (0 or 4).
#define CLASSIFY32(off, h) \
	VMOVDQU off(SI), Y0 \
	VPMOVMSKB Y0, AX \
	MOVL AX, (0*8+h)(DI) \
	MOVL AX, (7*8+h)(DI) \
	VPOR Y4, Y0, Y1 \
	VPSUBB Y5, Y1, Y1 \
	VPMINUB Y6, Y1, Y2 \
	VPCMPEQB Y1, Y2, Y2 \
	VPMOVMSKB Y2, AX \
	MOVL AX, (1*8+h)(DI) \
	VPSUBB Y7, Y0, Y1 \
	VPMINUB Y8, Y1, Y2 \
	VPCMPEQB Y1, Y2, Y2 \
	VPMOVMSKB Y2, AX \
	MOVL AX, (2*8+h)(DI) \
	VPSUBB Y8, Y0, Y1 \
	VPMINUB Y9, Y1, Y2 \
	VPCMPEQB Y1, Y2, Y2 \
	VPCMPEQB Y4, Y0, Y3 \
	VPOR Y3, Y2, Y2 \
	VPMOVMSKB Y2, AX \
	MOVL AX, (3*8+h)(DI) \
	VPMOVMSKB Y3, AX \
	MOVL AX, (4*8+h)(DI) \
	VPCMPEQB Y10, Y0, Y1 \
	VPMOVMSKB Y1, AX \
	MOVL AX, (5*8+h)(DI) \
	VPCMPEQB Y11, Y0, Y1 \
	VPCMPEQB Y12, Y0, Y2 \
	VPOR Y1, Y2, Y2 \
	VPMOVMSKB Y2, AX \
	MOVL AX, (6*8+h)(DI)

#define BROADCAST(c, y) \
	MOVQ $c, AX \
	MOVQ AX, X13 \
	VPBROADCASTQ X13, y

// func classifyBlocksAVX2(dst *classBlock, src *byte, n int)
TEXT ·classifyBlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	BROADCAST(0x2020202020202020, Y4)  // ' ', and the bit that makes ASCII letters lower case
	BROADCAST(0x6161616161616161, Y5)  // 'a'
	BROADCAST(0x1919191919191919, Y6)  // 25
	BROADCAST(0x3030303030303030, Y7)  // '0'
	BROADCAST(0x0909090909090909, Y8)  // 9, and '\t'
	BROADCAST(0x0404040404040404, Y9)  // 4 ('\r' - '\t')
	BROADCAST(0x2727272727272727, Y10) // '\''
	BROADCAST(0x0d0d0d0d0d0d0d0d, Y11) // '\r'
	BROADCAST(0x0a0a0a0a0a0a0a0a, Y12) // '\n'

loop:
	TESTQ CX, CX
	JZ    done
	CLASSIFY32(0, 0)
	CLASSIFY32(32, 4)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JMP  loop

done:
	VZEROUPPER
	RET
