//go:build amd64 && !noasm && gc

#include "textflag.h"

// shortTokens64 and shortTokens32: the loop of appendShortTokensGo (encode.go) for ids
// of 8 and 4 bytes, over the shortArgs at a+0(FP) (offsets below). Every value the loop
// needs stays in a register (the Go loop reloaded five from the stack per piece):
//
//	AX ends (current)  BX ends' end  CX text  DX prev  SI limit  DI out  R8 m
//	R10 front.slots    R11 front.long  R12 keyMasks  R13 n  R14 key  R15 slot, value
//	R9 scratch (MORE, a piece of four or more ids, borrows R10-R12 and restores them)
//
// The caller leaves room for three ids per piece in out: each value's three ids are
// stored (RORX: BMI2), then m moves by its count.

#define ARGS_TABLE 0
#define ARGS_LONG 8
#define ARGS_MASKS 16
#define ARGS_TEXT 24
#define ARGS_ENDS 32
#define ARGS_NENDS 40
#define ARGS_OUT 48
#define ARGS_M 56
#define ARGS_PREV 64
#define ARGS_LIMIT 72
#define ARGS_K 80
#define ARGS_MORE 88
#define ARGS_NMORE 96
#define ARGS_CAP 104
#define ARGS_FULL 112

DATA hashMul<>+0(SB)/8, $0x9E3779B97F4A7C15
DATA hashMul<>+8(SB)/8, $0xC2B2AE3D27D4EB4F
GLOBL hashMul<>(SB), RODATA|NOPTR, $16

#define LOAD_ARGS \
	MOVQ a+0(FP), R9 \
	MOVQ ARGS_TABLE(R9), R10 \
	MOVQ ARGS_LONG(R9), R11 \
	MOVQ ARGS_MASKS(R9), R12 \
	MOVQ ARGS_TEXT(R9), CX \
	MOVQ ARGS_ENDS(R9), AX \
	MOVQ ARGS_NENDS(R9), BX \
	LEAQ (AX)(BX*8), BX \
	MOVQ ARGS_OUT(R9), DI \
	MOVQ ARGS_M(R9), R8 \
	MOVQ ARGS_PREV(R9), DX \
	MOVQ ARGS_LIMIT(R9), SI

// LOOKUP finds the value of the piece at DX of R13 bytes in R15, or jumps to done.
#define LOOKUP(long, found, done) \
	CMPQ R13, $8 \
	JA   long \
	MOVQ (CX)(DX*1), R14 \
	ANDQ 0(R12)(R13*8), R14 \
	ORQ  256(R12)(R13*8), R14 \
	MOVQ R14, R15 \
	IMULQ hashMul<>+0(SB), R15 \
	SHRQ $40, R15 \
	ANDL $0xFFFF, R15 \
	SHLQ $4, R15 \
	NOTQ R14 \
	CMPQ (R10)(R15*1), R14 \
	JNE  done \
	MOVQ 8(R10)(R15*1), R15 \
	JMP  found \
long: \
	MOVQ (CX)(DX*1), R14 \
	MOVQ 8(CX)(DX*1), R9 \
	ANDQ 512(R12)(R13*8), R9 \
	ORQ  768(R12)(R13*8), R9 \
	MOVQ hashMul<>+8(SB), R15 \
	IMULQ R9, R15 \
	XORQ R14, R15 \
	IMULQ hashMul<>+0(SB), R15 \
	SHRQ $40, R15 \
	ANDL $0x3FFF, R15 \
	SHLQ $5, R15 \
	CMPQ (R11)(R15*1), R14 \
	JNE  done \
	NOTQ R9 \
	CMPQ 8(R11)(R15*1), R9 \
	JNE  done \
	MOVQ 16(R11)(R15*1), R15

// The loop's head: the next piece's length in R13, or done at the end of ends, for a
// piece longer than 16 bytes or one that starts past limit.
#define NEXT(done) \
	CMPQ AX, BX \
	JAE  done \
	MOVQ (AX), R13 \
	SUBQ DX, R13 \
	LEAQ -1(R13), R9 \
	CMPQ R9, $16 \
	JAE  done \
	CMPQ DX, SI \
	JG   done

// STORE_BACK writes k (pieces done), m and prev back to the arguments.
#define STORE_BACK \
	MOVQ a+0(FP), R9 \
	SUBQ ARGS_ENDS(R9), AX \
	SHRQ $3, AX \
	MOVQ AX, ARGS_K(R9) \
	MOVQ R8, ARGS_M(R9) \
	MOVQ DX, ARGS_PREV(R9)

// RESTORE reloads the front cache's tables and keyMasks, which MORE borrows.
#define RESTORE \
	MOVQ a+0(FP), R9 \
	MOVQ ARGS_TABLE(R9), R10 \
	MOVQ ARGS_LONG(R9), R11 \
	MOVQ ARGS_MASKS(R9), R12

// MORE appends the ids of a piece whose value has count 0 (four or more ids, in
// front.more: frontCache.moreIDs), its value's three 20-bit fields just stored at
// out[m:m+3] (the value is rebuilt from them: no register was free to keep it). It
// checks, as moreIDs does, that more still holds the piece (off+4+n <= len(more), the
// piece's key before its ids), and that out keeps room for three ids for each piece
// after this one (as the caller gave it: cap); if not, it ends the loop (full set
// when for want of room).
#define MORE(MOV, SIZE, loop, done, miss, full, copy) \
	MOV  (DI)(R8*SIZE), R15 \
	MOV  SIZE(DI)(R8*SIZE), R9 \
	SHLQ $20, R9 \
	ORQ  R9, R15 \
	MOV  (2*SIZE)(DI)(R8*SIZE), R9 \
	SHLQ $40, R9 \
	ORQ  R9, R15 \
	MOVQ (CX)(DX*1), R14 \
	ANDQ 0(R12)(R13*8), R14 \
	ORQ  256(R12)(R13*8), R14 \
	MOVQ 8(CX)(DX*1), R11 \
	ANDQ 512(R12)(R13*8), R11 \
	ORQ  768(R12)(R13*8), R11 \
	MOVL R15, R12 \
	SHRQ $32, R15 \
	ANDL $0xFFFF, R15 \
	JZ   miss \
	MOVQ a+0(FP), R10 \
	LEAQ 4(R12)(R15*1), R9 \
	CMPQ R9, ARGS_NMORE(R10) \
	JA   miss \
	MOVQ BX, R9 \
	SUBQ AX, R9 \
	SUBQ $8, R9 \
	SHRQ $3, R9 \
	LEAQ (R9)(R9*2), R9 \
	ADDQ R8, R9 \
	ADDQ R15, R9 \
	CMPQ R9, ARGS_CAP(R10) \
	JA   full \
	MOVQ ARGS_MORE(R10), R10 \
	CMPQ (R10)(R12*4), R14 \
	JNE  miss \
	CMPQ 8(R10)(R12*4), R11 \
	JNE  miss \
	LEAQ 16(R10)(R12*4), R10 \
copy: \
	MOVL (R10), R14 \
	MOV  R14, (DI)(R8*SIZE) \
	ADDQ $4, R10 \
	INCQ R8 \
	DECQ R15 \
	JNZ  copy \
	ADDQ R13, DX \
	ADDQ $8, AX \
	RESTORE \
	JMP  loop \
full: \
	MOVQ $1, ARGS_FULL(R10) \
miss: \
	RESTORE \
	JMP  done

// SHORT_TOKENS is the loop, storing ids with MOV (MOVQ or MOVL) at SIZE bytes each; a
// value of count 0 (four or more ids) goes through MORE.
#define SHORT_TOKENS(MOV, SIZE, long, found, loop, done, more, miss, full, copy) \
	LOAD_ARGS \
loop: \
	NEXT(done) \
	LOOKUP(long, found, done) \
found: \
	MOVL  R15, R9 \
	ANDL  $0xFFFFF, R9 \
	MOV   R9, (DI)(R8*SIZE) \
	RORXQ $20, R15, R9 \
	ANDL  $0xFFFFF, R9 \
	MOV   R9, SIZE(DI)(R8*SIZE) \
	RORXQ $40, R15, R9 \
	ANDL  $0xFFFFF, R9 \
	MOV   R9, (2*SIZE)(DI)(R8*SIZE) \
	SHRQ  $60, R15 \
	JZ    more \
	ADDQ  R15, R8 \
	ADDQ  R13, DX \
	ADDQ  $8, AX \
	JMP   loop \
more: \
	MORE(MOV, SIZE, loop, done, miss, full, copy) \
done: \
	STORE_BACK \
	RET

// func shortTokens64(a *shortArgs)
TEXT ·shortTokens64(SB), NOSPLIT, $0-8
	SHORT_TOKENS(MOVQ, 8, long64, found64, loop64, done64, more64, miss64, full64, copy64)

// func shortTokens32(a *shortArgs)
TEXT ·shortTokens32(SB), NOSPLIT, $0-8
	SHORT_TOKENS(MOVL, 4, long32, found32, loop32, done32, more32, miss32, full32, copy32)
