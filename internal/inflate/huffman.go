package inflate

import "unsafe"

// huffmanFast decodes symbols of the current block while at least 8 bytes of input are
// in the buffer and the output has room for a match, and returns at the block's end
// (state stBlockHeader), or when either runs short (state unchanged).
//
// The bit buffer is refilled without branches to 56-63 bits before each symbol: a
// literal/length code (15 bits at most) with its extra bits (5) and a distance code (15)
// with its extra bits (13) need 48. After a literal at least 41 bits are left, so the
// next symbol's table entry is loaded before the refill, off the refill's path, and a
// second literal in a row is decoded from those bits before refilling; after a match,
// the next entry is loaded before the match is copied. The loads and stores are unchecked: the loop's
// guards keep every one inside in and out (a match's 8-byte copies write 32 bytes at
// least and up to 7 past its end, into the room out keeps past outStop + 258).
func (z *Reader) huffmanFast() error {
	if !goOnly {
		z.fastAsm() // where there is one: from where it stops, the loop below goes on
	}
	bitbuf, bitsleft := z.bitbuf, z.bitsleft
	ip, op := z.ip, z.op
	ilimit := z.iend - 8
	in := unsafe.Pointer(unsafe.SliceData(z.in))
	out := unsafe.Pointer(unsafe.SliceData(z.out))
	lit, dist := z.lit, z.dist
	if ip > ilimit || op > outStop {
		return nil
	}
	bitbuf |= load64(unsafe.Add(in, ip)) << (bitsleft & 63)
	ip += int((63 - bitsleft) >> 3)
	bitsleft |= 56
	e := lit[bitbuf&litLenMask]
	for {
		if e&fExceptional != 0 {
			if e&fSubtable != 0 {
				bitbuf >>= litLenBits
				bitsleft -= litLenBits
				e = lit[e>>16+uint32(bitbuf)&(1<<(e>>8&15)-1)]
			}
			if e&fExceptional != 0 {
				bitbuf >>= e & 63
				bitsleft -= uint(e & 63)
				if e&fEndOfBlock != 0 {
					z.state = stBlockHeader
					break
				}
				z.bitbuf, z.bitsleft, z.ip, z.op = bitbuf, bitsleft, ip, op
				return z.corrupt("a literal/length code the block does not have")
			}
		}
		if int32(e) < 0 { // a literal
			bitbuf >>= e & 63
			bitsleft -= uint(e & 63)
			*(*byte)(unsafe.Add(out, op)) = byte(e >> 16)
			op++
			e = lit[bitbuf&litLenMask]
			if int32(e) < 0 {
				// A second literal in a row, from the bits left (41 at least): no
				// refill. (A literal entry is never exceptional.)
				bitbuf >>= e & 63
				bitsleft -= uint(e & 63)
				*(*byte)(unsafe.Add(out, op)) = byte(e >> 16)
				op++
				e = lit[bitbuf&litLenMask]
			}
			if ip > ilimit || op > outStop {
				break
			}
			bitbuf |= load64(unsafe.Add(in, ip)) << (bitsleft & 63)
			ip += int((63 - bitsleft) >> 3)
			bitsleft |= 56
			continue
		}
		n := e & 63
		length := int(e>>16) + int((bitbuf&(1<<n-1))>>(e>>8&15))
		bitbuf >>= n
		bitsleft -= uint(n)

		d := dist[bitbuf&distMask]
		if d&fExceptional != 0 {
			if d&fSubtable != 0 {
				bitbuf >>= distBits
				bitsleft -= distBits
				d = dist[d>>16+uint32(bitbuf)&(1<<(d>>8&15)-1)]
			}
			if d&fExceptional != 0 {
				z.bitbuf, z.bitsleft, z.ip, z.op = bitbuf, bitsleft, ip, op
				return z.corrupt("a distance code the block does not have")
			}
		}
		n = d & 63
		offset := int(d>>16) + int((bitbuf&(1<<n-1))>>(d>>8&15))
		bitbuf >>= n
		bitsleft -= uint(n)
		if offset > op {
			z.bitbuf, z.bitsleft, z.ip, z.op = bitbuf, bitsleft, ip, op
			return z.corrupt("a match reaches back before the data's start")
		}
		dst, src := unsafe.Add(out, op), unsafe.Add(out, op-offset)
		op += length
		// The next symbol's entry is loaded while the match is copied.
		more := ip <= ilimit && op <= outStop
		if more {
			bitbuf |= load64(unsafe.Add(in, ip)) << (bitsleft & 63)
			ip += int((63 - bitsleft) >> 3)
			bitsleft |= 56
			e = lit[bitbuf&litLenMask]
		}
		// The match, 8 bytes at a time; most are 32 bytes or shorter.
		if offset >= 8 {
			store64(dst, load64(src))
			store64(unsafe.Add(dst, 8), load64(unsafe.Add(src, 8)))
			store64(unsafe.Add(dst, 16), load64(unsafe.Add(src, 16)))
			store64(unsafe.Add(dst, 24), load64(unsafe.Add(src, 24)))
			for i := 32; i < length; i += 8 {
				store64(unsafe.Add(dst, i), load64(unsafe.Add(src, i)))
			}
		} else {
			copyShortOffset(dst, src, offset, length)
		}
		if !more {
			break
		}
	}
	z.bitbuf, z.bitsleft, z.ip, z.op = bitbuf, bitsleft, ip, op
	return nil
}

// copyShortOffset copies a match whose offset is under 8 bytes, from src to dst, which has
// room for length + 7 bytes.
func copyShortOffset(dst, src unsafe.Pointer, offset, length int) {
	if offset == 1 {
		v := uint64(*(*byte)(src)) * 0x0101010101010101
		for i := 0; i < length; i += 8 {
			store64(unsafe.Add(dst, i), v)
		}
		return
	}
	for i := range length {
		*(*byte)(unsafe.Add(dst, i)) = *(*byte)(unsafe.Add(src, i))
	}
}

// huffmanSlow decodes the current block's symbols one at a time, for the stream's last
// bytes: no symbol's output is written before its bits are known to be in the input.
func (z *Reader) huffmanSlow() error {
	for z.op <= outStop {
		e, err := z.slowSymbol(z.lit[:], litLenBits)
		if err != nil {
			return err
		}
		if e&fExceptional != 0 {
			if e&fEndOfBlock != 0 {
				z.state = stBlockHeader
				return nil
			}
			return z.corrupt("a literal/length code the block does not have")
		}
		if int32(e) < 0 {
			z.out[z.op] = byte(e >> 16)
			z.op++
			continue
		}
		length := int(e >> 16)
		d, err := z.slowSymbol(z.dist[:], distBits)
		if err != nil {
			return err
		}
		if d&fExceptional != 0 {
			return z.corrupt("a distance code the block does not have")
		}
		offset := int(d >> 16)
		if offset > z.op {
			return z.corrupt("a match reaches back before the data's start")
		}
		for i := range length {
			z.out[z.op+i] = z.out[z.op-offset+i]
		}
		z.op += length
	}
	return nil
}

// slowSymbol decodes a symbol of table (main index bits tableBits) with its extra bits and
// returns its entry with the extra bits added to its value.
func (z *Reader) slowSymbol(table []uint32, tableBits uint) (uint32, error) {
	z.need(maxCodeLen)
	e := table[z.bitbuf&(1<<tableBits-1)]
	if e&fSubtable != 0 {
		if _, err := z.take(tableBits); err != nil {
			return 0, err
		}
		e = table[e>>16+uint32(z.bitbuf)&(1<<(e>>8&15)-1)]
	}
	if e&fExceptional != 0 {
		_, err := z.take(uint(e & 0xff))
		return e, err
	}
	codeLen, total := uint(e>>8&15), uint(e&0xff)
	if _, err := z.take(codeLen); err != nil {
		return 0, err
	}
	extra, err := z.bits(total - codeLen)
	if err != nil {
		return 0, err
	}
	return e + extra<<16, nil
}
