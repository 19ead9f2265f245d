//go:build amd64 && !noasm && gc

#include "textflag.h"

// huffmanFastAMD64: huffmanFast (huffman.go), its readable twin, in assembly; the
// comments there say why each step is safe. Registers:
//   R8 bitbuf, R9 bitsleft, DX ip, BX op, SI in, DI out, R12 lit, R13 dist,
//   AX the next entry, R11 a match's length, R14 its offset, R10 where it starts,
//   CX shift counts and the match's source.
// Locals: ilimit; the bit buffer at the start of the current symbol (sbb, sbl), given
// back when the Go loop is left to decode it; more, whether the loop goes on after the
// match being copied.

#define S_BITBUF 0
#define S_BITSLEFT 8
#define S_IP 16
#define S_OP 24
#define S_IN 32
#define S_ILIMIT 40
#define S_OUT 48
#define S_LIT 56
#define S_DIST 64

// outStop (inflate.go): 32 KiB + 256 KiB.
#define OUT_STOP $0x48000

// REFILL: bitbuf |= load64(in+ip) << bitsleft; ip += (63-bitsleft)>>3; bitsleft |= 56.
#define REFILL(tmp) \
	MOVQ  (SI)(DX*1), tmp; \
	SHLXQ R9, tmp, tmp; \
	ORQ   tmp, R8; \
	MOVQ $63, tmp; \
	SUBQ R9, tmp; \
	SHRQ $3, tmp; \
	ADDQ tmp, DX; \
	ORQ  $56, R9

// EXTRA(e, dst): dst = bitbuf's low e&255 bits >> (e>>8 & 15), and those e&255 bits
// consumed: a length's or distance's extra bits. BZHI keeps the low bits its index's low
// byte counts; SHRX shifts by its count's low 6 bits, which for a length's or distance's
// entry (not exceptional: bits 12-15 clear) are e&63 and e>>8 & 15.
#define EXTRA(e, dst) \
	BZHIQ   e, R8, dst; \
	SHRXQ   e, R8, R8; \
	MOVBLZX e, CX; \
	SUBQ    CX, R9; \
	MOVL    e, CX; \
	SHRL    $8, CX; \
	SHRXQ   CX, dst, dst

// LITERAL: the literal entry AX's bits consumed, its byte written at op, and the next
// entry loaded into AX.
#define LITERAL \
	SHRXQ   AX, R8, R8; \
	MOVBLZX AX, CX; \
	SUBQ    CX, R9; \
	SHRL    $16, AX; \
	MOVB    AX, (DI)(BX*1); \
	INCQ    BX; \
	MOVL    R8, AX; \
	ANDL    $0x7ff, AX; \
	MOVL    (R12)(AX*4), AX

// SUBINDEX(e, bits, dst): the index of the subtable entry e points to, past the main
// table's bits (consumed): e>>16 + bitbuf's low (e>>8 & 15) bits.
#define SUBINDEX(e, bits, dst) \
	SHRQ $bits, R8; \
	SUBQ $bits, R9; \
	MOVQ e, CX; \
	SHRQ $8, CX; \
	ANDQ $15, CX; \
	MOVQ $1, dst; \
	SHLQ CX, dst; \
	DECQ dst; \
	ANDQ R8, dst; \
	SHRQ $16, e; \
	ADDQ e, dst

// func huffmanFastAMD64(s *fastState)
TEXT ·huffmanFastAMD64(SB), NOSPLIT, $32-8
	MOVQ s+0(FP), AX
	MOVQ S_BITBUF(AX), R8
	MOVQ S_BITSLEFT(AX), R9
	MOVQ S_IP(AX), DX
	MOVQ S_OP(AX), BX
	MOVQ S_IN(AX), SI
	MOVQ S_ILIMIT(AX), R10
	MOVQ R10, ilimit-8(SP)
	MOVQ S_OUT(AX), DI
	MOVQ S_LIT(AX), R12
	MOVQ S_DIST(AX), R13
	CMPQ DX, ilimit-8(SP)
	JGT  done
	CMPQ BX, OUT_STOP
	JGT  done
	REFILL(R14)
	MOVQ R8, AX
	ANDQ $0x7ff, AX
	MOVL (R12)(AX*4), AX

loop:
	TESTL $0x8000, AX
	JNZ   exceptional
	TESTL AX, AX
	JPL   match

literal:
	LITERAL
	TESTL AX, AX
	JPL   literaldone

	// A second literal in a row, from the bits left (41 at least): no refill.
	LITERAL

literaldone:
	CMPQ DX, ilimit-8(SP)
	JGT  done
	CMPQ BX, OUT_STOP
	JGT  done
	REFILL(R14)
	JMP  loop

match:
	MOVQ R8, sbb-16(SP)
	MOVQ R9, sbl-24(SP)

length:
	EXTRA(AX, R11)
	SHRL $16, AX
	ADDQ AX, R11
	MOVBLZX R8, AX
	MOVL (R13)(AX*4), AX
	TESTL $0x8000, AX
	JNZ   distexceptional

distance:
	EXTRA(AX, R14)
	SHRL $16, AX
	ADDQ AX, R14
	CMPQ R14, BX
	JGT  restore // before the data's start: the Go loop reports it
	MOVQ BX, R10
	ADDQ R11, BX
	CMPQ DX, ilimit-8(SP)
	JGT  last
	CMPQ BX, OUT_STOP
	JGT  last
	MOVQ $1, more-32(SP)
	REFILL(AX)
	MOVQ R8, AX
	ANDQ $0x7ff, AX
	MOVL (R12)(AX*4), AX
	JMP  copy

last:
	MOVQ $0, more-32(SP)

copy:
	ADDQ DI, R10
	MOVQ R10, CX
	SUBQ R14, CX
	CMPQ R14, $16
	JLT  copyshort
	MOVOU (CX), X0
	MOVOU X0, (R10)
	MOVOU 16(CX), X1
	MOVOU X1, 16(R10)
	CMPQ  R11, $32
	JLE   copied
	MOVQ  $32, R14

copy16:
	MOVOU (CX)(R14*1), X0
	MOVOU X0, (R10)(R14*1)
	ADDQ  $16, R14
	CMPQ  R14, R11
	JLT   copy16
	JMP   copied

copyshort:
	CMPQ R14, $8
	JLT  copytiny
	MOVQ (CX), X0
	MOVQ X0, (R10)
	MOVQ 8(CX), X0
	MOVQ X0, 8(R10)
	MOVQ 16(CX), X0
	MOVQ X0, 16(R10)
	MOVQ 24(CX), X0
	MOVQ X0, 24(R10)
	CMPQ R11, $32
	JLE  copied
	MOVQ $32, R14

copy8:
	MOVQ (CX)(R14*1), X0
	MOVQ X0, (R10)(R14*1)
	ADDQ $8, R14
	CMPQ R14, R11
	JLT  copy8
	JMP  copied

copytiny:
	CMPQ R14, $1
	JNE  copybytes
	MOVBQZX   (CX), R14
	MOVQ      R14, X0
	PUNPCKLBW X0, X0
	PUNPCKLWL X0, X0
	PSHUFL    $0, X0, X0
	XORQ      R14, R14

copyrun:
	MOVOU X0, (R10)(R14*1)
	ADDQ  $16, R14
	CMPQ  R14, R11
	JLT   copyrun
	JMP   copied

copybytes:
	MOVB (CX), R14
	MOVB R14, (R10)
	INCQ CX
	INCQ R10
	DECQ R11
	JNZ  copybytes

copied:
	CMPQ more-32(SP), $0
	JNE  loop
	JMP  done

exceptional:
	TESTL $0x4000, AX
	JZ    done // the end of the block, or a code the block lacks: the Go loop decodes it
	MOVQ  R8, sbb-16(SP)
	MOVQ  R9, sbl-24(SP)
	SUBINDEX(AX, 11, R14)
	CMPQ  R14, $2342 // litLenEnough
	JCC   restore
	MOVL  (R12)(R14*4), AX
	TESTL $0x8000, AX
	JNZ   restore
	TESTL AX, AX
	JMI   literal
	JMP   length

distexceptional:
	TESTL $0x4000, AX
	JZ    restore
	SUBINDEX(AX, 8, R14)
	CMPQ  R14, $402 // distEnough
	JCC   restore
	MOVL  (R13)(R14*4), AX
	TESTL $0x8000, AX
	JNZ   restore
	JMP   distance

restore:
	MOVQ sbb-16(SP), R8
	MOVQ sbl-24(SP), R9

done:
	MOVQ s+0(FP), AX
	MOVQ R8, S_BITBUF(AX)
	MOVQ R9, S_BITSLEFT(AX)
	MOVQ DX, S_IP(AX)
	MOVQ BX, S_OP(AX)
	RET
