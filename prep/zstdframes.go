package prep

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A zstd stream of several frames (pzstd, zstd -B, seekable-format writers) is decoded
// a frame at a time on several goroutines: frames are independent, so a file that has
// them decodes as fast as the cores allow, not at one core's ~1 GB/s. A frame is cut
// from the stream by its block headers alone (3 bytes each, no decoding), handed to a
// worker, and the frames' data comes out in order. A stream whose first frame does not
// say its size, or says more than maxParallelFrame, is one big frame (zstd's own
// output): it goes to the streaming decoder on one goroutine, as do all streams on one
// core, and the rest of a stream from the first frame that is too large. (The streaming
// decoder's own concurrency, which pipelines a frame's blocks on several goroutines,
// spent ~50% more CPU per byte and was slower on 2 cores: BenchmarkDecompress, 1,140
// against 1,437 MB/s; the tokenizers need that CPU.) BenchmarkDecompress measures the
// alternatives.

const (
	zstdMagic        = 0xFD2FB528
	maxParallelFrame = 32 << 20 // largest frame (decompressed) decoded whole by a worker
	// minParallelProcs: on one core, frames gain nothing (on 2 cores, BenchmarkDecompress:
	// 2,042 MB/s in 4 MiB frames against 1,132 through the streaming decoder).
	minParallelProcs = 2
)

// newZstdReader returns a reader of the zstd stream br: frames decoded in parallel when
// the stream starts with a frame of known size up to maxParallelFrame, else the
// streaming decoder. close frees its decoders and goroutines.
func newZstdReader(br *bufio.Reader) (r io.Reader, close func(), err error) {
	if size, ok := peekFrameSize(br); ok && size <= maxParallelFrame && runtime.GOMAXPROCS(0) >= minParallelProcs {
		pr := newParallelZstd(br, runtime.GOMAXPROCS(0))
		return pr, pr.close, nil
	}
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<29))
	if err != nil {
		return nil, nil, err
	}
	return zr, zr.Close, nil
}

// frameHeader is what newZstdReader needs of a frame header: its length, the frame's
// decompressed size (-1 when not given) and whether a checksum follows the blocks.
type frameHeader struct {
	size     int64
	headLen  int
	checksum bool
}

// parseFrameHeader parses the header of the zstd frame that starts b (magic included).
func parseFrameHeader(b []byte) (frameHeader, error) {
	if len(b) < 5 || binary.LittleEndian.Uint32(b) != zstdMagic {
		return frameHeader{}, errors.New("not a zstd frame")
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	did := [4]int{0, 1, 2, 4}[fhd&3]
	fcs := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcs = 1
	}
	n := 5 + did + fcs
	if !single {
		n++ // window descriptor
	}
	if len(b) < n {
		return frameHeader{}, io.ErrUnexpectedEOF
	}
	h := frameHeader{size: -1, headLen: n, checksum: fhd&4 != 0}
	f := b[n-fcs : n]
	switch fcs {
	case 1:
		h.size = int64(f[0])
	case 2:
		h.size = int64(binary.LittleEndian.Uint16(f)) + 256
	case 4:
		h.size = int64(binary.LittleEndian.Uint32(f))
	case 8:
		h.size = int64(binary.LittleEndian.Uint64(f))
	}
	return h, nil
}

// peekFrameSize returns the decompressed size the first frame of br says it has, if it
// is a zstd frame that says.
func peekFrameSize(br *bufio.Reader) (int64, bool) {
	b, _ := br.Peek(18) // the longest frame header
	h, err := parseFrameHeader(b)
	if err != nil || h.size < 0 {
		return 0, false
	}
	return h.size, true
}

// parallelZstd decodes the frames of a stream on workers goroutines, in order.
type parallelZstd struct {
	frames chan *zstdFrame // in stream order, for Read
	buf    []byte          // what Read has not handed out of the current frame
	done   []byte          // the current frame's data, to recycle once read
	free   chan []byte     // data buffers to decode into again
	rest   io.ReadCloser   // the streaming decoder of the rest of the stream, once it took over
	// redo is the compressed bytes of a frame a worker could not decode, which rest
	// then decodes again as a stream, so that what precedes the damage is read and
	// how far into the frame it got is known (nil otherwise).
	redo    *bytes.Reader
	redoErr error // the worker's error of that frame
	at      int64 // where in the stream the frame being read starts
	err     error
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// zstdFrame is one frame: its compressed bytes and, once done is closed, its data, the
// streaming decoder of the rest of the stream, or an error.
type zstdFrame struct {
	start int64 // where in the stream the frame starts
	in    []byte
	out   []byte
	rest  io.ReadCloser
	err   error
	done  chan struct{}
}

var errStopped = errors.New("zstd: reader closed")

func newParallelZstd(br *bufio.Reader, workers int) *parallelZstd {
	p := &parallelZstd{frames: make(chan *zstdFrame, 2*workers), stop: make(chan struct{}), free: make(chan []byte, 3*workers)}
	jobs := make(chan *zstdFrame, 2*workers)
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<29))
			if err == nil {
				defer dec.Close()
			}
			for f := range jobs {
				if err != nil {
					f.err = err
				} else {
					var buf []byte
					select {
					case buf = <-p.free:
					default:
					}
					f.out, f.err = dec.DecodeAll(f.in, buf[:0])
				}
				if f.err == nil {
					f.in = nil // a damaged frame's bytes are decoded again by Read
				}
				close(f.done)
			}
		}()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(p.frames)
		defer close(jobs)
		var off int64 // bytes of the stream cut so far
		for {
			f := &zstdFrame{done: make(chan struct{})}
			var end bool
			f.in, f.rest, end, f.err = nextFrame(br, &off)
			f.start = off
			off += int64(len(f.in))
			if end && f.in == nil && f.rest == nil && f.err == nil {
				return
			}
			whole := f.rest == nil && f.err == nil // a frame for a worker
			if !whole {
				close(f.done)
			}
			select {
			case p.frames <- f:
			case <-p.stop:
				if whole {
					f.err = errStopped
					close(f.done)
				}
				return
			}
			if !whole {
				return
			}
			select {
			case jobs <- f:
			case <-p.stop:
				f.err = errStopped
				close(f.done)
				return
			}
		}
	}()
	return p
}

// nextFrame cuts the next frame from br: its bytes, or (a frame too large, or of
// unknown size) rest, a streaming decoder of the rest of the stream. end is true when
// the stream ends (and there is no frame). off, the stream's bytes before br's, is
// moved past the skippable frames to where the frame starts.
func nextFrame(br *bufio.Reader, off *int64) (frame []byte, rest io.ReadCloser, end bool, err error) {
	for {
		head, err := br.Peek(8)
		if len(head) == 0 && err == io.EOF {
			return nil, nil, true, nil
		}
		if len(head) >= 8 && binary.LittleEndian.Uint32(head)&0xFFFFFFF0 == 0x184D2A50 {
			// A skippable frame (pzstd's index, seekable-format tables): no data.
			n, err := br.Discard(8 + int(binary.LittleEndian.Uint32(head[4:])))
			*off += int64(n)
			if err != nil {
				return nil, nil, false, fmt.Errorf("zstd: skippable frame: %w", err)
			}
			continue
		}
		break
	}
	b, _ := br.Peek(18)
	h, err := parseFrameHeader(b)
	if err != nil {
		return nil, nil, false, fmt.Errorf("zstd: %w", err)
	}
	if h.size < 0 || h.size > maxParallelFrame {
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<29))
		if err != nil {
			return nil, nil, false, err
		}
		return nil, zr.IOReadCloser(), false, nil
	}
	frame = make([]byte, h.headLen, h.headLen+int(h.size/2)+64)
	if _, err := io.ReadFull(br, frame); err != nil {
		return nil, nil, false, fmt.Errorf("zstd: frame header: %w", err)
	}
	for {
		var bh [3]byte
		if m, err := io.ReadFull(br, bh[:]); err != nil {
			return cutShort(append(frame, bh[:m]...), fmt.Errorf("zstd: block header: %w", unexpected(err)))
		}
		v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
		n := int(v >> 3)
		switch (v >> 1) & 3 {
		case 1: // RLE: one byte
			n = 1
		case 3:
			return nil, nil, false, errors.New("zstd: reserved block type")
		}
		frame = append(frame, bh[:]...)
		start := len(frame)
		frame = append(frame, make([]byte, n)...)
		if m, err := io.ReadFull(br, frame[start:]); err != nil {
			return cutShort(frame[:start+m], fmt.Errorf("zstd: block: %w", unexpected(err)))
		}
		if v&1 != 0 { // the last block
			break
		}
	}
	if h.checksum {
		var sum [4]byte
		if m, err := io.ReadFull(br, sum[:]); err != nil {
			return cutShort(append(frame, sum[:m]...), fmt.Errorf("zstd: checksum: %w", unexpected(err)))
		}
		frame = append(frame, sum[:]...)
	}
	return frame, nil, false, nil
}

// cutShort handles a frame the stream ends inside (a truncated file): the
// streaming decoder gets what there is of it, so the data of its whole blocks comes
// out before the error, as when the stream is read without cutting frames (a cut
// .jsonl.zst keeps the documents before the damage under --accept-truncated). A
// read error other than the stream's end is returned as it is.
func cutShort(partial []byte, err error) ([]byte, io.ReadCloser, bool, error) {
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, false, err
	}
	zr, zerr := zstd.NewReader(bytes.NewReader(partial), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<29))
	if zerr != nil {
		return nil, nil, false, err
	}
	return nil, zr.IOReadCloser(), false, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (p *parallelZstd) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		switch {
		case p.err != nil:
			return 0, p.err
		case p.rest != nil:
			n, err := p.rest.Read(b)
			if err == io.EOF && p.redo != nil {
				// The damaged frame decoded again to its end after all: the stream
				// still stops here, with the worker's error, not as if it ended.
				err = p.redoErr
			}
			if err != nil {
				p.err = err
			}
			return n, err
		}
		if p.done != nil {
			select {
			case p.free <- p.done:
			default:
			}
			p.done = nil
		}
		f, ok := <-p.frames
		if !ok {
			p.err = io.EOF
			continue
		}
		<-f.done
		p.buf, p.rest, p.err, p.at = f.out, f.rest, f.err, f.start
		p.done = f.out
		if f.err != nil && f.in != nil && !errors.Is(f.err, errStopped) {
			// Damaged: decode it again as a stream, which hands out the data up to
			// the damage (DecodeAll's part of it) and then fails, its reader saying
			// how far into the frame it got.
			redo := bytes.NewReader(f.in)
			if zr, err := zstd.NewReader(redo, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<29)); err == nil {
				p.redo, p.redoErr = redo, f.err
				p.buf, p.done, p.err, p.rest = nil, nil, nil, zr.IOReadCloser()
			}
		}
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// The file has been read well past the frame being read (frames ahead are being
// decoded), so streamRead, not the bytes read, says how far a stream that breaks
// here got.

// streamRead is how far into the stream the data read so far reaches, as
// frameStart, or within a damaged frame decoded again, the bytes of it its decoder
// read; ok is false once the streaming decoder of the rest of the stream has taken
// over (a frame of unknown or too large a size: zstd's own output), whose progress is
// the bytes read from the file.
func (p *parallelZstd) streamRead() (n int64, ok bool) {
	switch {
	case p.redo != nil:
		return p.at + p.redo.Size() - int64(p.redo.Len()), true
	case p.rest != nil:
		return 0, false
	}
	return p.at, true
}

func (p *parallelZstd) close() {
	p.once.Do(func() {
		close(p.stop)
		for f := range p.frames { // let the cutter and the workers finish
			<-f.done
			if f.rest != nil {
				f.rest.Close()
			}
		}
		if p.rest != nil {
			p.rest.Close()
		}
		p.wg.Wait()
	})
}
