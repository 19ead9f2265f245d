package inflate

// readBlockHeader reads a block's header, and a dynamic block's code, and sets the state
// that decodes its data.
func (z *Reader) readBlockHeader() error {
	h, err := z.bits(3)
	if err != nil {
		return err
	}
	z.final = h&1 != 0
	switch h >> 1 {
	case 0:
		return z.readStoredHeader()
	case 1:
		z.lit, z.dist = fixedTables()
	case 2:
		if err := z.readDynamicCode(); err != nil {
			return err
		}
		z.lit, z.dist = &z.dynLit, &z.dynDist
	default:
		return z.corrupt("block type 3")
	}
	z.state = stHuffman
	return nil
}

// readStoredHeader reads a stored block's length and its complement.
func (z *Reader) readStoredHeader() error {
	if err := z.alignToByte(); err != nil {
		return err
	}
	var b [4]byte
	if err := z.readFull(b[:]); err != nil {
		return err
	}
	n, nn := uint16(b[0])|uint16(b[1])<<8, uint16(b[2])|uint16(b[3])<<8
	if n != ^nn {
		return z.corrupt("a stored block's length does not match its complement")
	}
	z.storedLeft = int(n)
	z.state = stStored
	return nil
}

// copyStored copies a stored block's bytes to the output, as many as it has room for.
func (z *Reader) copyStored() error {
	for z.storedLeft > 0 && z.op <= outStop {
		if z.ip >= z.iend {
			z.readInput()
			if z.ip >= z.iend {
				return z.atEnd()
			}
		}
		n := copy(z.out[z.op:outSize-16], z.in[z.ip:min(z.iend, z.ip+z.storedLeft)])
		z.op += n
		z.ip += n
		z.storedLeft -= n
	}
	if z.storedLeft == 0 {
		z.state = stBlockHeader
	}
	return nil
}

// readDynamicCode reads a dynamic block's Huffman codes into dynLit and dynDist.
func (z *Reader) readDynamicCode() error {
	h, err := z.bits(14)
	if err != nil {
		return err
	}
	nlit, ndist, nclen := int(h&31)+257, int(h>>5&31)+1, int(h>>10)+4
	if nlit > 286 || ndist > 30 {
		return z.corrupt("more literal/length or distance codes than deflate has")
	}
	var clens [19]uint8
	for _, sym := range precodeOrder[:nclen] {
		l, err := z.bits(3)
		if err != nil {
			return err
		}
		clens[sym] = uint8(l)
	}
	var precode [1 << precodeBits]uint32
	if buildTable(precode[:], clens[:], precodeBits, precodeSyms[:]) != nil {
		return z.corrupt("invalid code length code")
	}
	lens := z.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		z.need(precodeBits)
		e := precode[z.bitbuf&(1<<precodeBits-1)]
		if e&fExceptional != 0 {
			return z.corrupt("invalid code length code")
		}
		if _, err := z.take(uint(e & 0xff)); err != nil {
			return err
		}
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return z.corrupt("a repeated code length with none before it")
			}
			n, err := z.bits(2)
			if err != nil {
				return err
			}
			rep, val = 3+int(n), lens[i-1]
		case 17:
			n, err := z.bits(3)
			if err != nil {
				return err
			}
			rep = 3 + int(n)
		default:
			n, err := z.bits(7)
			if err != nil {
				return err
			}
			rep = 11 + int(n)
		}
		if i+rep > len(lens) {
			return z.corrupt("code lengths repeated past the codes")
		}
		for j := range rep {
			lens[i+j] = val
		}
		i += rep
	}
	if buildTable(z.dynLit[:], lens[:nlit], litLenBits, litLenSyms[:]) != nil {
		return z.corrupt("invalid literal/length code")
	}
	if buildTable(z.dynDist[:], lens[nlit:], distBits, distSyms[:]) != nil {
		return z.corrupt("invalid distance code")
	}
	return nil
}
