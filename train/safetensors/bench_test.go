package safetensors

import (
	"bytes"
	"io"
	"testing"
)

// benchTensors is one 64 MiB tensor (16M float32s; GPT-2 124M is 7.4 of them).
func benchTensors(b *testing.B) []Tensor {
	n := 16 << 20
	ts := []Tensor{{Name: "w", Shape: []int{n}, Data: make([]float32, n)}}
	for i := range ts[0].Data {
		ts[0].Data[i] = float32(i)
	}
	return ts
}

// BenchmarkWrite measures the encoding alone (to io.Discard).
func BenchmarkWrite(b *testing.B) {
	ts := benchTensors(b)
	b.SetBytes(int64(4 * len(ts[0].Data)))
	for b.Loop() {
		if err := Write(io.Discard, ts, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead measures decoding from memory, allocation of the result included.
func BenchmarkRead(b *testing.B) {
	ts := benchTensors(b)
	var buf bytes.Buffer
	if err := Write(&buf, ts, nil); err != nil {
		b.Fatal(err)
	}
	r := bytes.NewReader(buf.Bytes())
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := Read(r, int64(buf.Len())); err != nil {
			b.Fatal(err)
		}
	}
}
