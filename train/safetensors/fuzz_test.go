package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"testing/iotest"
)

// FuzzRead feeds arbitrary bytes to Read: it must not panic or allocate beyond the
// input's size, and whatever it accepts must survive Write and Read unchanged.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []Tensor{
		{Name: "a", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "b", Shape: []int{0}, Data: nil},
		{Name: "c", Shape: []int{}, Data: []float32{-1}},
	}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(hfFile(`{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"d":{"dtype":"F64","shape":[1],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(hfFile(`{"b":{"dtype":"BF16","shape":[1,1],"data_offsets":[0,2]}}`, []byte{0x80, 0x3f}))
	f.Add(hfFile(`{"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(hfFile(`{"__metadata__":null}`, nil))
	f.Add(hfFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)))
	f.Add(binary.LittleEndian.AppendUint64(nil, math.MaxUint64))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		var n int
		for _, tt := range file.Tensors {
			n += len(tt.Data)
		}
		if n > len(data) {
			t.Fatalf("%d elements from a %d-byte file", n, len(data))
		}
		var out bytes.Buffer
		if err := Write(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("Write of what Read accepted: %v", err)
		}
		again, err := Read(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatalf("Read of what Write wrote: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) || len(again.Metadata) != len(file.Metadata) {
			t.Fatalf("round trip changed the file: %+v -> %+v", file, again)
		}
		for k, v := range file.Metadata {
			if again.Metadata[k] != v {
				t.Fatalf("metadata %q: %q -> %q", k, v, again.Metadata[k])
			}
		}
		for i, tt := range file.Tensors {
			a := again.Tensors[i]
			if a.Name != tt.Name || len(a.Data) != len(tt.Data) || len(a.Shape) != len(tt.Shape) {
				t.Fatalf("tensor %q changed: %+v -> %+v", tt.Name, tt, a)
			}
			for j := range tt.Data {
				if math.Float32bits(a.Data[j]) != math.Float32bits(tt.Data[j]) {
					t.Fatalf("tensor %q element %d: %v -> %v", tt.Name, j, tt.Data[j], a.Data[j])
				}
			}
		}
	})
}

// FuzzReadInto: ReadInto, reading a stream a few bytes at a time, accepts what Read
// accepts, with the same values, and refuses the rest with Read's error; the tensor its
// dst skips ("c") is left out of both, whatever its dtype (ReadFileExcept).
func FuzzReadInto(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []Tensor{
		{Name: "a", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "b", Shape: []int{0}, Data: nil},
		{Name: "c", Shape: []int{}, Data: []float32{-1}},
	}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(hfFile(`{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"d":{"dtype":"F64","shape":[1],"data_offsets":[4,12]}}`, []byte{0, 0x3c, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}))
	f.Add(hfFile(`{"b":{"dtype":"BF16","shape":[1,1],"data_offsets":[0,2]}}`, []byte{0x80, 0x3f}))
	f.Add(hfFile(`{"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(hfFile(`{"c":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, make([]byte, 6)))
	f.Add(hfFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)))
	f.Add(binary.LittleEndian.AppendUint64(nil, math.MaxUint64))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := read(bytes.NewReader(data), int64(len(data)), func(name string) bool { return name == "c" })
		if werr != nil {
			werr = fmt.Errorf("safetensors: %w", werr) // (as Read says it)
		}
		got := map[string][]float32{}
		_, err := ReadInto(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)), func(in Info) ([]float32, error) {
			if in.Name == "c" { // one skipped
				return nil, nil
			}
			d := make([]float32, in.Size/dtypeSize[in.DType])
			got[in.Name] = d
			return d, nil
		})
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("ReadInto: %v; Read: %v", err, werr)
		}
		if err != nil {
			return
		}
		for _, tt := range want.Tensors {
			if tt.Name == "c" {
				continue
			}
			d, ok := got[tt.Name]
			if !ok || len(d) != len(tt.Data) {
				t.Fatalf("tensor %q: ReadInto gave %v, Read %v", tt.Name, d, tt.Data)
			}
			for j := range d {
				if math.Float32bits(d[j]) != math.Float32bits(tt.Data[j]) {
					t.Fatalf("tensor %q[%d]: ReadInto %v, Read %v", tt.Name, j, d[j], tt.Data[j])
				}
			}
		}
	})
}
