package inflate

import (
	"errors"
	"math/bits"
	"sync"
)

// A decode table entry is a uint32 that says, for the next bits of the input, what they
// code and how many of them to consume:
//
//	bit 31      literal: bits 16-23 are the byte
//	bit 15      exceptional: a subtable pointer (bit 14), the end of the block (bit 13),
//	            or else a code the stream may not use
//	bits 16-30  the value: a literal, a match length's or distance's base, or where a
//	            subtable starts
//	bits 8-11   the Huffman code's length in bits (a subtable pointer: the subtable's
//	            index bits)
//	bits 0-7    the bits to consume: the code's length plus its extra bits
//
// A length or distance is base + the extra bits, which are the input's bits from the
// code's length to the total (`(bitbuf & (1<<total - 1)) >> codeLen`). Codes longer
// than the main table's index bits go through a subtable: the main entry points to it
// and consumes the index bits, the subtable's entry the rest.
const (
	fLiteral     = 1 << 31
	fExceptional = 1 << 15
	fSubtable    = 1 << 14
	fEndOfBlock  = 1 << 13

	invalidEntry = fExceptional
)

// Main table index bits, and each table's room for its main part and every subtable a
// complete code can need (zlib's `enough` program: 288 symbols at 11 bits, 32 at 8, 15
// bits at most; the code length code's 19 symbols never need a subtable at 7).
const (
	litLenBits   = 11
	litLenMask   = 1<<litLenBits - 1
	litLenEnough = 2342
	distBits     = 8
	distMask     = 1<<distBits - 1
	distEnough   = 402
	precodeBits  = 7
	maxCodeLen   = 15
)

// The symbols' meanings, RFC 1951 section 3.2.5.
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// precodeOrder is the order the code length code's lengths are stored in.
	precodeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// What each symbol decodes to, in entries without their code's length: a length's or
// distance's extra bits are in bits 0-7, where buildTable adds the code's length.
var litLenSyms, distSyms, precodeSyms = func() (ll [288]uint32, d [32]uint32, pc [19]uint32) {
	for sym := range ll {
		switch {
		case sym < 256:
			ll[sym] = fLiteral | uint32(sym)<<16
		case sym == 256:
			ll[sym] = fExceptional | fEndOfBlock
		case sym < 286:
			ll[sym] = uint32(lengthBase[sym-257])<<16 | uint32(lengthExtra[sym-257])
		default:
			ll[sym] = invalidEntry // 286 and 287: in the fixed code, never to be used
		}
	}
	for sym := range d {
		d[sym] = invalidEntry // 30 and 31: in the fixed code, never to be used
		if sym < 30 {
			d[sym] = uint32(distBase[sym])<<16 | uint32(distExtra[sym])
		}
	}
	for sym := range pc {
		pc[sym] = uint32(sym) << 16
	}
	return
}()

var errBadCode = errors.New("invalid Huffman code lengths")

// buildTable fills table from the code lengths of the symbols 0..len(lens)-1 with
// tableBits main index bits. Like compress/flate it takes only complete codes, but for
// one code of one bit, and a code with no symbols at all (whose every entry is
// invalid). The table's entries for bit patterns no symbol has are invalid.
func buildTable(table []uint32, lens []uint8, tableBits uint, syms []uint32) error {
	var count [maxCodeLen + 1]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	left, codes := 1, 0
	for l := 1; l <= maxCodeLen; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return errBadCode // over-subscribed
		}
		codes += count[l]
	}
	if left > 0 {
		// Incomplete: none at all, or one code of one bit; the bit patterns no code
		// has decode to an error.
		if codes > 1 || (codes == 1 && count[1] != 1) {
			return errBadCode
		}
		for i := range table[:1<<tableBits] {
			table[i] = invalidEntry
		}
		if codes == 0 {
			return nil
		}
	}
	// The symbols in canonical order: by length, then by value.
	var offs [maxCodeLen + 2]int
	for l := 1; l <= maxCodeLen; l++ {
		offs[l+1] = offs[l] + count[l]
	}
	var sorted [288]uint16
	for sym, l := range lens {
		if l != 0 {
			sorted[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	remaining := count
	mainSize := 1 << tableBits
	next := mainSize // where the next subtable goes
	prefix, subStart, subBits := -1, 0, uint(0)
	code := 0 // the current codeword, most significant bit first
	for i, sym := range sorted[:codes] {
		l := uint(lens[sym])
		rev := int(bits.Reverse16(uint16(code)) >> (16 - l))
		if l <= tableBits {
			e := syms[sym] + uint32(l)<<8 + uint32(l)
			for j := rev; j < mainSize; j += 1 << l {
				table[j] = e
			}
		} else {
			if p := rev & (mainSize - 1); p != prefix {
				// A new subtable: as many index bits as the codes under this
				// prefix need to fill it.
				bits := l - tableBits
				room := 1 << bits
				for bits+tableBits < maxCodeLen {
					room -= remaining[bits+tableBits]
					if room <= 0 {
						break
					}
					bits++
					room <<= 1
				}
				prefix, subStart, subBits = p, next, bits
				next += 1 << bits
				if next > len(table) {
					return errBadCode // cannot happen for a complete code
				}
				table[p] = fExceptional | fSubtable | uint32(subStart)<<16 | uint32(bits)<<8 | uint32(tableBits)
			}
			sl := l - tableBits
			e := syms[sym] + uint32(sl)<<8 + uint32(sl)
			for j := rev >> tableBits; j < 1<<subBits; j += 1 << sl {
				table[subStart+j] = e
			}
		}
		remaining[l]--
		code++
		if i+1 < codes {
			code <<= uint(lens[sorted[i+1]]) - l
		}
	}
	return nil
}

// fixedTables returns the tables of the fixed Huffman code (RFC 1951 section 3.2.6), made
// on first use.
var fixedTables = sync.OnceValues(func() (*[litLenEnough]uint32, *[distEnough]uint32) {
	var lens [288]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	ll, d := new([litLenEnough]uint32), new([distEnough]uint32)
	if buildTable(ll[:], lens[:], litLenBits, litLenSyms[:]) != nil {
		panic("inflate: the fixed literal/length code")
	}
	var dl [32]uint8
	for i := range dl {
		dl[i] = 5
	}
	if buildTable(d[:], dl[:], distBits, distSyms[:]) != nil {
		panic("inflate: the fixed distance code")
	}
	return ll, d
})
