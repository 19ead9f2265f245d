package safetensors

import (
	"fmt"
	"io"
)

// ReadInto reads a safetensors file of size bytes from r in one pass, front to back,
// putting each tensor's values (converted to float32, as Read does) straight into the
// slice dst returns for it: no copy of the file or of its tensors is held, only a
// buffer of 64K elements for the dtypes that need converting. dst is called once per
// tensor, in file order, with its header entry; it returns a slice of exactly the
// tensor's element count, or nil to skip the tensor (its bytes are read and dropped),
// or an error, which ReadInto returns as it is. The file is validated as Read
// validates it (the whole header before any data). A skipped tensor may be of any
// dtype (an I64 or BOOL buffer beside the weights, as ReadFileExcept leaves out); a
// tensor dst gives a slice for must be of a dtype that converts to float32, else
// ReadInto fails naming the tensor and its dtype (dst sees the dtype in Info first).
// ReadInto reads exactly size bytes and no more: a reader that checks what it passes
// at its end (a checkpoint's) is read to io.EOF by the caller.
func ReadInto(r io.Reader, size int64, dst func(Info) ([]float32, error)) (metadata map[string]string, err error) {
	sr := &seqReader{r: r}
	meta, entries, err := readHeader(sr, size)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var buf []byte
	for _, e := range entries { // (in data order, contiguous from the header's end)
		d, err := dst(Info{Name: e.name, DType: e.dtype, Shape: e.shape, Offset: e.begin, Size: e.end - e.begin})
		if err != nil {
			return nil, err
		}
		if d == nil { // (whatever its dtype: it was refused before dst could skip it)
			if err := sr.skip(e.end - e.begin); err != nil {
				return nil, fmt.Errorf("safetensors: tensor %q: reading bytes [%d,%d): %w", e.name, e.begin, e.end, err)
			}
			continue
		}
		if !floatDTypes[e.dtype] {
			return nil, fmt.Errorf("safetensors: tensor %q (header byte %d): dtype %s is not supported (only F32, F16, BF16 and F64 convert to float32)", e.name, e.at, e.dtype)
		}
		n := (e.end - e.begin) / dtypeSize[e.dtype]
		if int64(len(d)) != n {
			return nil, fmt.Errorf("safetensors: ReadInto: a destination of %d values for tensor %q of %d", len(d), e.name, n)
		}
		if err := readValues(sr, d, e, &buf); err != nil { // (sr: at e.begin, in order)
			return nil, fmt.Errorf("safetensors: %w", err)
		}
	}
	return meta, nil
}

// seqReader serves the ReadAt calls of readHeader and readValues, which come in file
// order, from a plain reader; a skipped tensor's bytes are read past with skip.
type seqReader struct {
	r   io.Reader
	pos int64
}

func (s *seqReader) ReadAt(p []byte, off int64) (int, error) {
	if off != s.pos {
		return 0, fmt.Errorf("safetensors: internal error: read at byte %d of a stream at byte %d", off, s.pos)
	}
	n, err := io.ReadFull(s.r, p)
	s.pos += int64(n)
	return n, err
}

func (s *seqReader) skip(n int64) error {
	m, err := io.CopyN(io.Discard, s.r, n)
	s.pos += m
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
