//go:build amd64 && !noasm && gc

package inflate

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasBMI2: huffmanFastAMD64 uses BMI2's BZHI, SHLX and SHRX (Haswell, 2013, and Zen on);
// without them the Go loop decodes.
var hasBMI2 = cpu.X86.HasBMI2

// asmLoop reports whether huffmanFast runs huffmanFastAMD64 first (with BMI2).
func asmLoop() bool { return hasBMI2 }

// fastState is what huffmanFastAMD64 reads and writes: huffmanFast's bit buffer and
// positions, and the buffers and tables they index.
type fastState struct {
	bitbuf   uint64
	bitsleft uint
	ip, op   int
	in       unsafe.Pointer
	ilimit   int
	out      unsafe.Pointer
	lit      *[litLenEnough]uint32
	dist     *[distEnough]uint32
}

// huffmanFastAMD64 is huffmanFast's loop in assembly (huffman_amd64.s): the same
// decoding, the same guards, with the loop's values kept in registers (the compiled Go
// loop spills several to the stack, one on the bit buffer's refill), BMI2's shifts by a
// table entry's low bits (no count moved into CX, no masks built) and matches copied 16
// bytes at a time. It stops where huffmanFast would stop (the guards) and, without
// consuming it, at any symbol it leaves to the Go loop: the end of a block, a code the
// block lacks, a match reaching back before the data's start.
//
//go:noescape
func huffmanFastAMD64(s *fastState)

// fastAsm runs huffmanFastAMD64 from z's state and keeps where it stopped; huffmanFast
// then goes on from there in Go.
func (z *Reader) fastAsm() {
	if !hasBMI2 {
		return
	}
	s := fastState{
		bitbuf: z.bitbuf, bitsleft: z.bitsleft, ip: z.ip, op: z.op,
		in: unsafe.Pointer(unsafe.SliceData(z.in)), ilimit: z.iend - 8,
		out: unsafe.Pointer(unsafe.SliceData(z.out)), lit: z.lit, dist: z.dist,
	}
	huffmanFastAMD64(&s)
	z.bitbuf, z.bitsleft, z.ip, z.op = s.bitbuf, s.bitsleft, s.ip, s.op
}
