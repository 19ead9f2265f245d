//go:build amd64 && !noasm && gc

#include "textflag.h"

// The plain stretches of JSON strings, 32 bytes per step (see jsontext_amd64.go).
//
// Escapes are found without a branch per escape (the corpora's text has one every
// 9-40 bytes, and a mispredicted branch each cost more than the bytes between): from
// the mask BS of a block's backslashes and the carry c (1 when the previous block's
// last byte started an escape, so that this block's first byte is escaped),
// simdjson's arithmetic gives the mask ES of the backslashes that start an escape and
// E of the bytes escaped:
//
//	P  = BS &^ c
//	t  = (((P << 1) | ODD) - P) ^ ODD   (ODD: the odd bits)
//	E  = t ^ (BS | c)
//	ES = t & BS, and the next block's c is bit 31 of ES
//
// Every step moves 32 bytes: the next load does not wait for this block's masks.
// Constants are broadcast from memory (no legacy SSE instruction between 256-bit
// ones).

DATA jsonBytes<>+0(SB)/1, $0x22 // "
DATA jsonBytes<>+1(SB)/1, $0x5c // backslash
DATA jsonBytes<>+2(SB)/1, $0x20 // space
DATA jsonBytes<>+3(SB)/1, $0x2f // /
DATA jsonBytes<>+4(SB)/1, $0x62 // b
DATA jsonBytes<>+5(SB)/1, $0x66 // f
DATA jsonBytes<>+6(SB)/1, $0x6e // n
DATA jsonBytes<>+7(SB)/1, $0x72 // r
DATA jsonBytes<>+8(SB)/1, $0x74 // t
DATA jsonBytes<>+9(SB)/1, $0x75 // u
GLOBL jsonBytes<>(SB), RODATA|NOPTR, $10

// ESCAPES sets R11 to E and R12 to ES from the backslash mask in AX and the carry
// in R15 (R13, R14 clobbered).
#define ESCAPES \
	MOVQ AX, R12 \
	MOVQ R15, R14 \
	NOTQ R14 \
	ANDQ AX, R14 \
	LEAQ (R14)(R14*1), R11 \
	MOVQ $0xAAAAAAAAAAAAAAAA, R13 \
	ORQ  R13, R11 \
	SUBQ R14, R11 \
	XORQ R13, R11 \
	ANDQ R11, R12 \
	ORQ  R15, AX \
	XORQ AX, R11

// func scanPlainAVX2(p *byte, n int, esc *[256]byte) (i int, escaped bool)
//
// A byte stops the scan when it is a quote, a control character or a byte ≥ 0x80 (as
// a signed byte, below 0x20: VPCMPGTB) that no backslash escapes; a backslash stops
// it when the byte it escapes is not one of "\/bfnrt (\u, a bad escape). With the
// stops shifted up by one, S = ((quotes | CT) &^ E) << 1 | (E &^ V), the scan stops at
// i + tz(S) - 1 (the backslash of a bad escape, which may end the block before).
TEXT ·scanPlainAVX2(SB), NOSPLIT, $0-33
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), DX
	XORQ BX, BX
	XORL R9, R9
	XORQ R15, R15
	VPBROADCASTB jsonBytes<>+0(SB), Y1
	VPBROADCASTB jsonBytes<>+1(SB), Y2
	VPBROADCASTB jsonBytes<>+2(SB), Y3
	VPBROADCASTB jsonBytes<>+3(SB), Y7
	VPBROADCASTB jsonBytes<>+4(SB), Y8
	VPBROADCASTB jsonBytes<>+5(SB), Y9
	VPBROADCASTB jsonBytes<>+6(SB), Y10
	VPBROADCASTB jsonBytes<>+7(SB), Y11
	VPBROADCASTB jsonBytes<>+8(SB), Y12
	MOVQ DX, R10
	SUBQ $32, R10

scanLoop:
	CMPQ BX, R10
	JGT  scanEnd
	VMOVDQU (SI)(BX*1), Y0
	VPCMPEQB Y1, Y0, Y4
	VPCMPEQB Y2, Y0, Y5
	VPCMPGTB Y0, Y3, Y6
	VPOR Y4, Y5, Y13
	VPOR Y6, Y13, Y13
	VPTEST Y13, Y13
	JNZ  scanSpecial
	TESTQ R15, R15
	JNZ  scanSpecial
	ADDQ $32, BX
	JMP  scanLoop

scanSpecial:
	// V (CX): the bytes a backslash may escape (not u).
	VPCMPEQB Y7, Y0, Y13
	VPCMPEQB Y8, Y0, Y14
	VPOR Y14, Y13, Y13
	VPCMPEQB Y9, Y0, Y14
	VPOR Y14, Y13, Y13
	VPCMPEQB Y10, Y0, Y14
	VPOR Y14, Y13, Y13
	VPCMPEQB Y11, Y0, Y14
	VPOR Y14, Y13, Y13
	VPCMPEQB Y12, Y0, Y14
	VPOR Y14, Y13, Y13
	VPOR Y4, Y13, Y13
	VPOR Y5, Y13, Y13
	VPMOVMSKB Y13, CX
	VPMOVMSKB Y5, AX
	XORL R14, R14
	TESTL AX, AX
	SETNE R14B
	ORL  R14, R9
	ESCAPES
	// S (DI)
	VPMOVMSKB Y4, DI
	VPMOVMSKB Y6, R14
	ORQ  R14, DI
	MOVQ R11, R14
	NOTQ R14
	ANDQ R14, DI
	SHLQ $1, DI
	MOVL R11, R14
	NOTQ CX
	ANDQ CX, R14
	ORQ  R14, DI
	TESTQ DI, DI
	JNZ  scanStop
	MOVQ R12, R15
	SHRQ $31, R15
	ANDL $1, R15
	ADDQ $32, BX
	JMP  scanLoop

scanStop:
	BSFQ DI, DI
	LEAQ -1(BX)(DI*1), BX
	JMP  scanDone

scanEnd:
	SUBQ R15, BX // an escape across the end: from its backslash

scanDone:
	VZEROUPPER
	MOVQ BX, i+24(FP)
	MOVB R9, escaped+32(FP)
	RET

// func decodePlainAVX2(dst, src *byte, n int, esc *[256]byte) (i, o int)
//
// A block without backslashes is copied whole. Otherwise, from its first byte not yet
// decoded (seg), 32 bytes are stored, and after each escape start (ES, lowest first)
// the byte it stands for is written and the 32 bytes after the escape are stored
// after it: one store per escape, no branch but the loop's. o stands for src byte seg
// throughout. The decoding stops before a \u (Go decodes those). It needs 65 bytes
// of src left (the store after an escape at the block's end reads 33 bytes past it).
TEXT ·decodePlainAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ esc+24(FP), R8
	XORQ BX, BX
	XORQ R9, R9
	XORQ R15, R15
	VPBROADCASTB jsonBytes<>+1(SB), Y2
	VPBROADCASTB jsonBytes<>+9(SB), Y15
	MOVQ DX, R10
	SUBQ $65, R10

decodeLoop:
	CMPQ BX, R10
	JGT  decodeEnd
	VMOVDQU (SI)(BX*1), Y0
	VPCMPEQB Y2, Y0, Y4
	VPMOVMSKB Y4, AX
	MOVL AX, CX
	ORL  R15, CX
	JNZ  decodeEscapes
	VMOVDQU Y0, (DI)(R9*1)
	ADDQ $32, BX
	ADDQ $32, R9
	JMP  decodeLoop

decodeEscapes:
	// The bytes from seg = c on.
	LEAQ (BX)(R15*1), CX
	VMOVDQU (SI)(CX*1), Y6
	VMOVDQU Y6, (DI)(R9*1)
	ESCAPES
	// L (R13): where the block's decoding ends, 32 unless a \u comes first (the
	// escaped u's are E's bits, but for bit 0, checked by the block before).
	MOVQ $32, R13
	VPCMPEQB Y15, Y0, Y5
	VPMOVMSKB Y5, R14
	ANDL R11, R14
	ANDL $-2, R14
	JZ   decodeCarry
	BSFL R14, R13
	DECQ R13
	// ES &= 1<<L - 1; no carry out
	MOVQ R13, CX
	MOVL $1, R14
	SHLQ CX, R14
	DECQ R14
	ANDQ R14, R12
	XORQ R14, R14
	JMP  decodeSegments

decodeCarry:
	// The carry out (R14): an escape starting at byte 31, unless it is a \u, where
	// the block ends (L = 31).
	MOVQ R12, R14
	SHRQ $31, R14
	ANDL $1, R14
	JZ   decodeSegments
	MOVBLZX 32(SI)(BX*1), CX
	CMPL CX, $0x75
	JNE  decodeSegments
	MOVQ $31, R13
	BTRQ $31, R12
	XORQ R14, R14

decodeSegments:
	MOVQ R15, R11 // seg
	MOVQ R14, R15 // the carry into the next block

decodeSegment:
	TESTQ R12, R12
	JZ   decodeBlockDone
	BSFQ R12, R14
	LEAQ -1(R12), AX
	ANDQ AX, R12
	ADDQ R14, R9
	SUBQ R11, R9
	LEAQ 1(BX)(R14*1), AX
	MOVBLZX (SI)(AX*1), AX
	MOVBLZX (R8)(AX*1), AX
	MOVB AL, (DI)(R9*1)
	INCQ R9
	LEAQ 2(R14), R11
	LEAQ (BX)(R11*1), AX
	VMOVDQU (SI)(AX*1), Y6
	VMOVDQU Y6, (DI)(R9*1)
	JMP  decodeSegment

decodeBlockDone:
	// o += L + carry out - seg
	ADDQ R13, R9
	ADDQ R15, R9
	SUBQ R11, R9
	ADDQ R13, BX
	CMPQ R13, $32
	JEQ  decodeLoop
	JMP  decodeDone

decodeEnd:
	ADDQ R15, BX // o stands for the byte after a carried escape

decodeDone:
	VZEROUPPER
	MOVQ BX, i+32(FP)
	MOVQ R9, o+40(FP)
	RET

// func decodePlainAVX512(dst, src *byte, n int, table *[128]byte) (i, o int)
//
// decodePlainAVX2 without a loop over the escapes, 64 bytes per step: the escaped
// bytes (E) are translated through table (VPERMI2B, merge-masked by E: the others stay
// as they are), the escape starts (ES) are dropped by VPCOMPRESSB, and the block's
// bytes are stored at o, which moves by the bytes kept (POPCNT). A \u stops it before
// its backslash; an escape across the end of src is left to Go from its backslash
// (which the block before dropped, writing nothing for it, so that o stands for it).
TEXT ·decodePlainAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ table+24(FP), R8
	XORQ BX, BX
	XORQ R9, R9
	XORQ R15, R15
	VPBROADCASTB jsonBytes<>+1(SB), Z2
	VPBROADCASTB jsonBytes<>+9(SB), Z15
	VMOVDQU8 0(R8), Z5
	VMOVDQU8 64(R8), Z4
	MOVQ DX, R10
	SUBQ $64, R10

decode512Loop:
	CMPQ BX, R10
	JGT  decode512End
	VMOVDQU8 (SI)(BX*1), Z0
	VPCMPEQB Z2, Z0, K1
	KMOVQ K1, AX
	MOVQ AX, CX
	ORQ  R15, CX
	JNZ  decode512Escapes
	VMOVDQU8 Z0, (DI)(R9*1)
	ADDQ $64, BX
	ADDQ $64, R9
	JMP  decode512Loop

decode512Escapes:
	ESCAPES
	// keep (CX): the bytes written, all but the escape starts; up to a \u.
	MOVQ R12, CX
	NOTQ CX
	VPCMPEQB Z15, Z0, K3
	KMOVQ K3, R14
	ANDQ R11, R14
	JNZ  decode512U
	SHRQ $63, R12
	MOVQ R12, R15
	MOVQ $64, R13
	JMP  decode512Write

decode512U:
	// The u at bit p: stop at its backslash, bit p-1 (p = 0: in the block before).
	BSFQ R14, R14
	TESTQ R14, R14
	JZ   decode512Back
	LEAQ -1(R14), R13
	MOVQ R13, R12
	MOVQ CX, R14
	MOVQ R12, CX
	MOVL $1, AX
	SHLQ CX, AX
	DECQ AX
	MOVQ R14, CX
	ANDQ AX, CX
	XORQ R15, R15

decode512Write:
	KMOVQ R11, K1
	KMOVQ CX, K2
	VMOVDQU8 Z0, Z3
	VPERMI2B Z4, Z5, K1, Z3
	VPCOMPRESSB Z3, K2, Z6
	VMOVDQU8 Z6, (DI)(R9*1)
	POPCNTQ CX, CX
	ADDQ CX, R9
	ADDQ R13, BX
	CMPQ R13, $64
	JEQ  decode512Loop
	JMP  decode512Done

decode512Back:
	DECQ BX
	JMP  decode512Done

decode512End:
	SUBQ R15, BX

decode512Done:
	VZEROUPPER
	MOVQ BX, i+32(FP)
	MOVQ R9, o+40(FP)
	RET

// func scanPlainAVX512(p *byte, n int) (i int, escaped bool)
//
// scanPlainAVX2, 64 bytes per step, the masks in K registers. The first stop is the
// lesser of tz((quotes | CT) &^ E) and tz(E &^ V) - 1 (64-bit masks: no room to shift).
TEXT ·scanPlainAVX512(SB), NOSPLIT, $0-25
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), DX
	XORQ BX, BX
	XORL R9, R9
	XORQ R15, R15
	VPBROADCASTB jsonBytes<>+0(SB), Z1
	VPBROADCASTB jsonBytes<>+1(SB), Z2
	VPBROADCASTB jsonBytes<>+2(SB), Z3
	VPBROADCASTB jsonBytes<>+3(SB), Z7
	VPBROADCASTB jsonBytes<>+4(SB), Z8
	VPBROADCASTB jsonBytes<>+5(SB), Z9
	VPBROADCASTB jsonBytes<>+6(SB), Z10
	VPBROADCASTB jsonBytes<>+7(SB), Z11
	VPBROADCASTB jsonBytes<>+8(SB), Z12
	MOVQ DX, R10
	SUBQ $64, R10

scan512Loop:
	CMPQ BX, R10
	JGT  scan512End
	VMOVDQU8 (SI)(BX*1), Z0
	VPCMPEQB Z1, Z0, K1
	VPCMPEQB Z2, Z0, K2
	VPCMPGTB Z0, Z3, K3
	KORQ K1, K2, K4
	KORQ K3, K4, K4
	KORTESTQ K4, K4
	JNZ  scan512Special
	TESTQ R15, R15
	JNZ  scan512Special
	ADDQ $64, BX
	JMP  scan512Loop

scan512Special:
	VPCMPEQB Z7, Z0, K5
	VPCMPEQB Z8, Z0, K6
	KORQ K5, K6, K5
	VPCMPEQB Z9, Z0, K6
	KORQ K5, K6, K5
	VPCMPEQB Z10, Z0, K6
	KORQ K5, K6, K5
	VPCMPEQB Z11, Z0, K6
	KORQ K5, K6, K5
	VPCMPEQB Z12, Z0, K6
	KORQ K5, K6, K5
	KORQ K5, K1, K5
	KORQ K5, K2, K5
	KMOVQ K5, CX
	KMOVQ K2, AX
	XORL R14, R14
	TESTQ AX, AX
	SETNE R14B
	ORL  R14, R9
	ESCAPES
	// S1 (DI) = (quotes | CT) &^ E; S2 (CX) = E &^ V
	KMOVQ K1, DI
	KMOVQ K3, R14
	ORQ  R14, DI
	MOVQ R11, R14
	NOTQ R14
	ANDQ R14, DI
	NOTQ CX
	ANDQ R11, CX
	// R13 = min(tz(S1) + 1, tz(S2)), 65 when neither has a bit
	MOVQ $65, R13
	MOVQ $65, R14
	BSFQ DI, AX
	JZ   scan512NoS1
	LEAQ 1(AX), R13

scan512NoS1:
	BSFQ CX, AX
	JZ   scan512NoS2
	MOVQ AX, R14

scan512NoS2:
	CMPQ R14, R13
	CMOVQLT R14, R13
	CMPQ R13, $65
	JNE  scan512Stop
	MOVQ R12, R15
	SHRQ $63, R15
	ADDQ $64, BX
	JMP  scan512Loop

scan512Stop:
	LEAQ -1(BX)(R13*1), BX
	JMP  scan512Done

scan512End:
	SUBQ R15, BX

scan512Done:
	VZEROUPPER
	MOVQ BX, i+16(FP)
	MOVB R9, escaped+24(FP)
	RET
