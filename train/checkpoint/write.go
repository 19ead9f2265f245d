package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// hashingWriter counts and hashes what passes through it to w.
type hashingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func newHashingWriter(w io.Writer) *hashingWriter { return &hashingWriter{w: w, h: sha256.New()} }

func (hw *hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

func (hw *hashingWriter) info(name string) FileInfo {
	return FileInfo{Name: name, Size: hw.n, SHA256: hex.EncodeToString(hw.h.Sum(nil))}
}

// writeThrough runs write into a buffered, hashing writer over w and returns the file's
// entry once everything is flushed to w.
func writeThrough(w io.Writer, name string, write func(io.Writer) error) (FileInfo, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	hw := newHashingWriter(bw)
	if err := write(hw); err != nil {
		return FileInfo{}, err
	}
	if err := bw.Flush(); err != nil {
		return FileInfo{}, err
	}
	return hw.info(name), nil
}
