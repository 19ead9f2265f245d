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

// The constant bytes, each broadcast to a whole register. (Broadcasting from general
// registers through MOVQ, a legacy SSE instruction, cost ~1 µs a call here: every SSE
// instruction after a 256-bit one is an AVX state transition.)
DATA consts<>+0(SB)/1, $0x20 // ' ', and the bit that makes ASCII letters lower case
DATA consts<>+1(SB)/1, $0x61 // 'a'
DATA consts<>+2(SB)/1, $0x19 // 25
DATA consts<>+3(SB)/1, $0x30 // '0'
DATA consts<>+4(SB)/1, $0x09 // 9, and '\t'
DATA consts<>+5(SB)/1, $0x04 // 4 ('\r' - '\t')
DATA consts<>+6(SB)/1, $0x27 // '\''
DATA consts<>+7(SB)/1, $0x0d // '\r'
DATA consts<>+8(SB)/1, $0x0a // '\n'
GLOBL consts<>(SB), RODATA|NOPTR, $9

// BROADCAST_CONSTS broadcasts the constant bytes, in order, to registers r0-r8.
#define BROADCAST_CONSTS(r0, r1, r2, r3, r4, r5, r6, r7, r8) \
	VPBROADCASTB consts<>+0(SB), r0 \
	VPBROADCASTB consts<>+1(SB), r1 \
	VPBROADCASTB consts<>+2(SB), r2 \
	VPBROADCASTB consts<>+3(SB), r3 \
	VPBROADCASTB consts<>+4(SB), r4 \
	VPBROADCASTB consts<>+5(SB), r5 \
	VPBROADCASTB consts<>+6(SB), r6 \
	VPBROADCASTB consts<>+7(SB), r7 \
	VPBROADCASTB consts<>+8(SB), r8

// func classifyBlocksAVX2(dst *classBlock, src *byte, n int)
TEXT ·classifyBlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	BROADCAST_CONSTS(Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12)

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

// func classifyBlocksAVX512(dst *classBlock, src *byte, n int)
//
// The masks of classifyBlocksAVX2, 64 bytes per step: the comparisons write mask
// registers (unsigned ≤ as VPCMPUB's predicate 2), each a whole word of the block.
TEXT ·classifyBlocksAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	BROADCAST_CONSTS(Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12)

loop512:
	TESTQ CX, CX
	JZ    done512
	VMOVDQU64 (SI), Z0
	VPMOVB2M Z0, K1
	KMOVQ K1, AX
	MOVQ AX, (0*8)(DI)
	MOVQ AX, (7*8)(DI)
	VPORQ Z4, Z0, Z1
	VPSUBB Z5, Z1, Z1
	VPCMPUB $2, Z6, Z1, K2
	KMOVQ K2, AX
	MOVQ AX, (1*8)(DI)
	VPSUBB Z7, Z0, Z1
	VPCMPUB $2, Z8, Z1, K2
	KMOVQ K2, AX
	MOVQ AX, (2*8)(DI)
	VPSUBB Z8, Z0, Z1
	VPCMPUB $2, Z9, Z1, K2
	VPCMPEQB Z4, Z0, K3
	KORQ K2, K3, K2
	KMOVQ K2, AX
	MOVQ AX, (3*8)(DI)
	KMOVQ K3, AX
	MOVQ AX, (4*8)(DI)
	VPCMPEQB Z10, Z0, K2
	KMOVQ K2, AX
	MOVQ AX, (5*8)(DI)
	VPCMPEQB Z11, Z0, K2
	VPCMPEQB Z12, Z0, K3
	KORQ K2, K3, K2
	KMOVQ K2, AX
	MOVQ AX, (6*8)(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JMP  loop512

done512:
	VZEROUPPER
	RET

// func asciiPrefixAVX2(p *byte, n int, c uint64) int
//
// The length of the longest prefix of p[:n] made of whole 128-byte chunks of ASCII
// bytes other than the byte c (asciiPrefixGo is its twin): the comparisons with c give
// 0xFF, whose high bit the non-ASCII test reads too.
TEXT ·asciiPrefixAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVQ c+16(FP), X2
	VPBROADCASTB X2, Y2
	XORQ AX, AX
	ANDQ $-128, CX

asciiloop:
	CMPQ AX, CX
	JGE  asciidone
	VMOVDQU (SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y1
	VMOVDQU 64(SI)(AX*1), Y3
	VMOVDQU 96(SI)(AX*1), Y4
	VPOR    Y1, Y0, Y5
	VPOR    Y4, Y3, Y6
	VPOR    Y6, Y5, Y5
	VPCMPEQB Y2, Y0, Y0
	VPCMPEQB Y2, Y1, Y1
	VPCMPEQB Y2, Y3, Y3
	VPCMPEQB Y2, Y4, Y4
	VPOR    Y1, Y0, Y0
	VPOR    Y4, Y3, Y3
	VPOR    Y3, Y0, Y0
	VPOR    Y0, Y5, Y5
	VPMOVMSKB Y5, DX
	TESTL   DX, DX
	JNZ     asciidone
	ADDQ    $128, AX
	JMP     asciiloop

asciidone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
