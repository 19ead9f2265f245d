// Package inflate decompresses gzip files (RFC 1952) and the DEFLATE streams in them
// (RFC 1951), streaming, 2.7-3.4× as fast per CPU-second as klauspost/compress/gzip, the
// fastest Go decoder the module proxy serves (BenchmarkDecompress in prep,
// BenchmarkGunzip here; docs/tokenizer-performance.md).
//
// Why by hand: `tokenize run` and `prep` on a `.jsonl.gz` spent 20-30% of their CPU in
// klauspost's decoder. The Go decoders (compress/flate and klauspost's fork of it) take the
// stream a byte at a time into a 32-bit bit buffer and decode one symbol per check of
// the input; C's libdeflate is 2-3× faster on the same data but has no streaming
// interface and is a C library. This package decodes as libdeflate does, in Go: a
// 64-bit bit buffer refilled without branches (one refill covers a literal/length code,
// its extra bits, a distance code and its extra bits), tables whose entries hold a
// symbol's meaning and bit counts together, matches copied eight bytes at a time. On
// amd64 with BMI2 the hot loop is also in assembly (huffman_amd64.s: its values in
// registers, matches copied 16 bytes at a time; the decoder 1.1-1.4× as fast with it as
// with the Go loop, BenchmarkGunzip; the Go loop is its readable twin and the only loop
// with -tags noasm or without BMI2; TestAsmMatchesGo). On the 2-vCPU Emerald Rapids VM it
// decodes ~0.9× as much per CPU-second as libdeflate itself (through ctypes, whole
// buffer; BenchmarkDecompress/gzip/libdeflate-c in prep). It keeps a 32 KiB window and
// 256 KiB of output, so memory stays small whatever the file.
//
// What it accepts is what compress/gzip accepts (FuzzMatchesStdlib): several members one
// after another, each's CRC-32 and length checked; trailing bytes that are not a gzip
// member are an error. One difference: a name or comment in a member's header may be of
// any length (compress/gzip refuses those of 512 bytes or more). Errors say at which
// byte of the compressed stream the data broke; a truncated stream gives the data
// before the break, then io.ErrUnexpectedEOF.
package inflate

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// The errors a stream can end with, wrapped with where it broke.
var (
	ErrCorrupt  = errors.New("corrupt deflate data")
	ErrHeader   = errors.New("not a gzip member header")
	ErrChecksum = errors.New("gzip checksum or length mismatch")
)

const (
	window   = 32 << 10  // the history a match may reach
	outChunk = 256 << 10 // output decoded per fill
	outStop  = window + outChunk
	// outSize leaves room past outStop for one match (258 bytes) and the 8-byte
	// copies' overrun.
	outSize = outStop + 258 + 16
	inSize  = 256 << 10
	// inPad bytes are kept before the unread input when it moves: the bit buffer's
	// bytes (at most 7 whole ones) may be given back.
	inPad = 16
)

// Decoder states between fills.
const (
	stMemberHeader = iota // a gzip member's header next (or the end of the file)
	stBlockHeader         // a block's header next
	stStored              // inside a stored block
	stHuffman             // inside a Huffman-coded block
	stMemberEnd           // after the final block: the gzip trailer next
	stDone
)

// Reader decompresses a gzip file or a raw DEFLATE stream read from an io.Reader.
type Reader struct {
	bufs   *buffers
	src    io.Reader
	srcEOF bool
	srcErr error // a read error other than io.EOF, once the input before it is used

	in       []byte // in[ip:iend] is input not yet in the bit buffer
	ip, iend int
	inBase   int64 // the stream offset of in[0]

	bitbuf   uint64 // input bits, least significant first
	bitsleft uint   // how many of bitbuf's bits are input

	out     []byte // out[:op] is output and history; out[rp:op] not yet read
	op, rp  int
	crcFrom int // out[crcFrom:op] is not yet in crc

	state      int
	gzip       bool
	final      bool // the current block is the member's last
	storedLeft int
	members    int
	crc        uint32
	size       uint32
	err        error

	lit     *[litLenEnough]uint32 // the current block's tables
	dist    *[distEnough]uint32
	dynLit  [litLenEnough]uint32
	dynDist [distEnough]uint32
	lens    [288 + 32]uint8
}

// NewGzipReader returns a reader of the data of the gzip file r reads. It reads the first
// member's header before it returns: an error then means r holds no gzip data.
func NewGzipReader(r io.Reader) (*Reader, error) {
	z := newReader(r)
	z.gzip = true
	z.state = stMemberHeader
	if err := z.readGzipHeader(); err != nil {
		z.Close()
		if err == io.EOF {
			err = fmt.Errorf("%w: the stream is empty", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	z.state = stBlockHeader
	return z, nil
}

// NewReader returns a reader of the data of the raw DEFLATE stream r reads (as in a zip
// member). It reads r ahead, up to 256 KiB: bytes after the stream's end may be read.
func NewReader(r io.Reader) *Reader {
	z := newReader(r)
	z.state = stBlockHeader
	return z
}

func newReader(r io.Reader) *Reader {
	b := bufferPool.Get().(*buffers)
	return &Reader{src: r, bufs: b, in: b.in, out: b.out}
}

// buffers are a Reader's input and output buffers (~560 KiB), which Close gives back for
// the next Reader: a zip archive of many small members opens one for each.
type buffers struct{ in, out []byte }

var bufferPool = sync.Pool{New: func() any {
	return &buffers{in: make([]byte, inSize+inPad), out: make([]byte, outSize)}
}}

var errClosed = errors.New("inflate: read after Close")

// Read reads decompressed data into p.
func (z *Reader) Read(p []byte) (int, error) {
	for z.rp == z.op {
		if z.err != nil {
			return 0, z.err
		}
		z.fill()
	}
	n := copy(p, z.out[z.rp:z.op])
	z.rp += n
	return n, nil
}

// WriteTo writes the decompressed data to w, without the copy Read makes.
func (z *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if z.rp < z.op {
			n, err := w.Write(z.out[z.rp:z.op])
			z.rp += n
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if z.err != nil {
			if z.err == io.EOF {
				return total, nil
			}
			return total, z.err
		}
		z.fill()
	}
}

// Close gives the reader's buffers back for other readers to use; reading after it is an
// error.
func (z *Reader) Close() error {
	if z.bufs != nil {
		bufferPool.Put(z.bufs)
		z.bufs, z.in, z.out = nil, nil, nil
		z.op, z.rp, z.err = 0, 0, errClosed
	}
	return nil
}

// fill decodes up to outChunk bytes more into out[op:], all of out[:op] having been read.
func (z *Reader) fill() {
	if z.state == stMemberHeader {
		z.op, z.rp, z.crcFrom = 0, 0, 0 // a member's matches do not reach into the one before
	} else if z.op > window {
		copy(z.out, z.out[z.op-window:z.op])
		z.op, z.rp, z.crcFrom = window, window, window
	}
	if err := z.decode(); err != nil {
		z.err = err
	}
	z.sum()
}

// sum adds the output since the last sum to the member's CRC-32 and length.
func (z *Reader) sum() {
	if z.gzip && z.crcFrom < z.op {
		z.crc = crc32.Update(z.crc, crc32.IEEETable, z.out[z.crcFrom:z.op])
		z.size += uint32(z.op - z.crcFrom)
	}
	z.crcFrom = z.op
}

// decode runs the decoder until it has output outChunk bytes more, a gzip member ends, or
// the stream does (io.EOF) or breaks.
func (z *Reader) decode() error {
	for z.op <= outStop {
		switch z.state {
		case stMemberHeader: // fill has reset the window
			if err := z.readGzipHeader(); err != nil {
				return err
			}
			z.state = stBlockHeader
		case stBlockHeader:
			if z.final {
				z.state = stMemberEnd
				continue
			}
			if err := z.readBlockHeader(); err != nil {
				return err
			}
		case stStored:
			if err := z.copyStored(); err != nil {
				return err
			}
		case stHuffman:
			if err := z.decodeHuffman(); err != nil {
				return err
			}
		case stMemberEnd:
			return z.endMember()
		case stDone:
			return io.EOF
		}
	}
	return nil
}

// slowOnly makes every symbol go through huffmanSlow, the readable twin of huffmanFast
// (for the tests).
var slowOnly = false

// goOnly makes huffmanFast decode in Go where it has an assembly loop (for the tests).
var goOnly = false

// decodeHuffman decodes the current block until it ends or the output is full.
func (z *Reader) decodeHuffman() error {
	for z.op <= outStop && z.state == stHuffman {
		var err error
		switch {
		case z.iend-z.ip >= 8 && !slowOnly:
			err = z.huffmanFast()
		case !z.srcEOF && !slowOnly:
			z.readInput()
		default: // the stream's last bytes
			err = z.huffmanSlow()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readInput moves the unread input to the buffer's front, keeping the inPad bytes before
// it, and reads more after it. At the source's end it sets srcEOF.
func (z *Reader) readInput() {
	if z.srcEOF {
		return
	}
	keep := min(z.ip, inPad)
	if from := z.ip - keep; from > 0 {
		copy(z.in, z.in[from:z.iend])
		z.inBase += int64(from)
		z.ip -= from
		z.iend -= from
	}
	for empty := 0; z.iend < inSize && !z.srcEOF; {
		n, err := z.src.Read(z.in[z.iend:inSize])
		if n < 0 || n > inSize-z.iend {
			z.srcEOF, z.srcErr = true, fmt.Errorf("inflate: the source's Read returned %d bytes for a buffer of %d", n, inSize-z.iend)
			break
		}
		z.iend += n
		switch {
		case err == io.EOF:
			z.srcEOF = true
		case err != nil:
			z.srcEOF, z.srcErr = true, err
		case n == 0:
			if empty++; empty == 100 {
				z.srcEOF, z.srcErr = true, io.ErrNoProgress
			}
		}
		if n > 0 && z.iend-z.ip >= 64 {
			break
		}
	}
}

// atEnd is the error of input used past its end: a truncated stream, or the source's
// read error.
func (z *Reader) atEnd() error {
	if z.srcErr != nil {
		return fmt.Errorf("reading the compressed stream at byte %d: %w", z.inBase+int64(z.iend), z.srcErr)
	}
	return fmt.Errorf("the compressed stream ends at byte %d, in the middle of its data: %w", z.inBase+int64(z.iend), io.ErrUnexpectedEOF)
}

// consumed is how many bits of the stream the decoder has used, from the buffer's start.
func (z *Reader) consumed() int64 { return int64(z.ip)*8 - int64(z.bitsleft) }

// corrupt is the error of corrupt data at the current position.
func (z *Reader) corrupt(what string) error {
	return fmt.Errorf("%w at byte %d of the compressed stream: %s", ErrCorrupt, z.inBase+z.consumed()/8, what)
}

// need makes bitsleft at least n (≤ 56), reading bytes one at a time. Past the end of
// the input it adds zero bytes, which take then refuses to consume.
func (z *Reader) need(n uint) {
	for z.bitsleft < n {
		if z.ip >= z.iend {
			if !z.srcEOF {
				z.readInput()
				continue
			}
			z.ip++ // a zero byte past the end
			z.bitsleft += 8
			continue
		}
		z.bitbuf |= uint64(z.in[z.ip]) << z.bitsleft
		z.ip++
		z.bitsleft += 8
	}
}

// take consumes n bits (which need made present) and returns them.
func (z *Reader) take(n uint) (uint32, error) {
	v := uint32(z.bitbuf & (1<<n - 1))
	z.bitbuf >>= n
	z.bitsleft -= n
	if z.srcEOF && z.consumed() > int64(z.iend)*8 {
		return 0, z.atEnd()
	}
	return v, nil
}

// bits reads n bits (≤ 32).
func (z *Reader) bits(n uint) (uint32, error) {
	z.need(n)
	return z.take(n)
}

// alignToByte drops the bits up to the next byte boundary and gives the whole bytes left
// in the bit buffer back to the input.
func (z *Reader) alignToByte() error {
	z.bitsleft &^= 7
	z.ip -= int(z.bitsleft >> 3)
	z.bitbuf, z.bitsleft = 0, 0
	if z.ip > z.iend {
		return z.atEnd()
	}
	return nil
}

// readByte reads a byte from a byte boundary; io.EOF only at the end of the input.
func (z *Reader) readByte() (byte, error) {
	if z.ip >= z.iend {
		z.readInput()
		if z.ip >= z.iend {
			if z.srcErr != nil {
				return 0, z.atEnd()
			}
			return 0, io.EOF
		}
	}
	b := z.in[z.ip]
	z.ip++
	return b, nil
}

// readFull reads len(p) bytes from a byte boundary.
func (z *Reader) readFull(p []byte) error {
	for i := range p {
		b, err := z.readByte()
		if err == io.EOF {
			return z.atEnd()
		} else if err != nil {
			return err
		}
		p[i] = b
	}
	return nil
}
