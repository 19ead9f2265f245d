package inflate

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// gzip header flags (RFC 1952 section 2.3.1).
const (
	flagHeaderCRC = 1 << 1
	flagExtra     = 1 << 2
	flagName      = 1 << 3
	flagComment   = 1 << 4
)

// readGzipHeader reads a member's header. At the end of the input, before any byte of
// it, it returns io.EOF.
func (z *Reader) readGzipHeader() error {
	start := z.inBase + int64(z.ip)
	var h [10]byte
	b, err := z.readByte()
	if err != nil {
		return err // io.EOF: no more members
	}
	h[0] = b
	if err := z.readFull(h[1:]); err != nil {
		return err
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
		return fmt.Errorf("%w at byte %d (it starts with % x)", ErrHeader, start, h[:3])
	}
	flags := h[3]
	digest := crc32.ChecksumIEEE(h[:])
	if flags&flagExtra != 0 {
		var n [2]byte
		if err := z.readFull(n[:]); err != nil {
			return err
		}
		digest = crc32.Update(digest, crc32.IEEETable, n[:])
		for range binary.LittleEndian.Uint16(n[:]) {
			c, err := z.headerByte()
			if err != nil {
				return err
			}
			digest = crc32.Update(digest, crc32.IEEETable, []byte{c})
		}
	}
	for _, f := range []byte{flagName, flagComment} {
		if flags&f == 0 {
			continue
		}
		for {
			c, err := z.headerByte()
			if err != nil {
				return err
			}
			digest = crc32.Update(digest, crc32.IEEETable, []byte{c})
			if c == 0 {
				break
			}
		}
	}
	if flags&flagHeaderCRC != 0 {
		var c [2]byte
		if err := z.readFull(c[:]); err != nil {
			return err
		}
		if binary.LittleEndian.Uint16(c[:]) != uint16(digest) {
			return fmt.Errorf("%w at byte %d: its CRC-16 does not match", ErrHeader, start)
		}
	}
	z.members++
	z.crc, z.size, z.final = 0, 0, false
	return nil
}

// headerByte reads a byte of a header that must go on.
func (z *Reader) headerByte() (byte, error) {
	c, err := z.readByte()
	if err == io.EOF {
		return 0, z.atEnd()
	}
	return c, err
}

// endMember ends a member after its final block: checks its trailer and looks for
// another. In a raw DEFLATE stream, it gives back the bit buffer's unused bytes.
func (z *Reader) endMember() error {
	if err := z.alignToByte(); err != nil {
		return err
	}
	if !z.gzip {
		z.state = stDone
		return io.EOF
	}
	z.sum()
	var t [8]byte
	if err := z.readFull(t[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(t[:4]) != z.crc || binary.LittleEndian.Uint32(t[4:]) != z.size {
		return fmt.Errorf("%w: member %d, ending at byte %d", ErrChecksum, z.members, z.inBase+int64(z.ip))
	}
	// Another member follows, or the file ends here.
	if z.ip >= z.iend {
		z.readInput()
	}
	if z.ip >= z.iend {
		if z.srcErr != nil {
			return z.atEnd()
		}
		z.state = stDone
		return io.EOF
	}
	z.state = stMemberHeader
	return nil
}
