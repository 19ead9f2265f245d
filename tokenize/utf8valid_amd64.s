//go:build amd64 && !noasm && gc

#include "textflag.h"

// func validUTF8AVX2(p *byte, n int, t *utf8Tables) bool
//
// Y0 the previous 32 bytes (zero, "ASCII", before the first), Y1 the errors so far,
// Y2 the current 32 bytes; Y4, Y5, Y6 the bytes one, two and three before each.
TEXT ·validUTF8AVX2(SB), NOSPLIT, $0-25
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ t+16(FP), DX
	VMOVDQU 0(DX), Y10   // byte1High
	VMOVDQU 32(DX), Y11  // byte1Low
	VMOVDQU 64(DX), Y12  // byte2High
	VMOVDQU 96(DX), Y13  // 0x0F
	VMOVDQU 128(DX), Y14 // 0xE0-0x80
	VMOVDQU 160(DX), Y15 // 0xF0-0x80
	VMOVDQU 192(DX), Y9  // 0x80
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop:
	CMPQ CX, $32
	JB   done
	VMOVDQU (SI), Y2
	// Y3 = [high lane of the previous bytes, low lane of these]: with VPALIGNR, each
	// lane of Y2 shifted up by k bytes, filled from the lane before.
	VPERM2I128 $0x21, Y2, Y0, Y3
	VPALIGNR $15, Y3, Y2, Y4
	VPALIGNR $14, Y3, Y2, Y5
	VPALIGNR $13, Y3, Y2, Y6

	// The errors of each pair (byte before, byte): AND of three lookups.
	VPSRLW  $4, Y4, Y7
	VPAND   Y13, Y7, Y7
	VPSHUFB Y7, Y10, Y7
	VPAND   Y13, Y4, Y8
	VPSHUFB Y8, Y11, Y8
	VPAND   Y8, Y7, Y7
	VPSRLW  $4, Y2, Y8
	VPAND   Y13, Y8, Y8
	VPSHUFB Y8, Y12, Y8
	VPAND   Y8, Y7, Y7

	// Two continuation bytes are right exactly where a 3- or 4-byte lead is two or
	// three bytes back.
	VPSUBUSB Y14, Y5, Y5
	VPSUBUSB Y15, Y6, Y6
	VPOR     Y6, Y5, Y5
	VPAND    Y9, Y5, Y5
	VPXOR    Y5, Y7, Y7
	VPOR     Y7, Y1, Y1

	VMOVDQU Y2, Y0
	ADDQ    $32, SI
	SUBQ    $32, CX
	JMP     loop

done:
	VPTEST Y1, Y1
	SETEQ  ret+24(FP)
	VZEROUPPER
	RET
