package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// hfFile builds a file the way the Hugging Face library lays one out: length, header
// (padded with spaces to 8 bytes), data.
func hfFile(header string, data []byte) []byte {
	for len(header)%8 != 0 {
		header += " "
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func le32(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TestWriteMatchesHuggingFace checks Write's bytes against the Hugging Face library's own
// test vector (bindings/python/tests/test_simple.py, test_serialization: a 2x2 I32 zero
// tensor "test" serializes to '@\0..\0{"test":{"dtype":"I32","shape":[2,2],
// "data_offsets":[0,16]}}    ' and 16 zero bytes), with F32 in place of I32.
func TestWriteMatchesHuggingFace(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "test", Shape: []int{2, 2}, Data: make([]float32, 4)}}, nil); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("@\x00\x00\x00\x00\x00\x00\x00"+`{"test":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}    `), make([]byte, 16)...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

func TestWriteSortsAndPutsMetadataFirst(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, []Tensor{
		{Name: "b", Shape: []int{2}, Data: []float32{3, 4}},
		{Name: "a", Shape: []int{1, 1}, Data: []float32{1.5}},
		{Name: "empty", Shape: []int{0, 3}, Data: nil},
		{Name: "scalar", Shape: []int{}, Data: []float32{-2}},
	}, map[string]string{"z": "last", "format": "pt", "<&>": "é"})
	if err != nil {
		t.Fatal(err)
	}
	header := `{"__metadata__":{"<&>":"é","format":"pt","z":"last"},` +
		`"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},` +
		`"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},` +
		`"empty":{"dtype":"F32","shape":[0,3],"data_offsets":[12,12]},` +
		`"scalar":{"dtype":"F32","shape":[],"data_offsets":[12,16]}}`
	want := hfFile(header, le32(1.5, 3, 4, -2))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got\n%q\nwant\n%q", buf.Bytes(), want)
	}
	f, err := Read(bytes.NewReader(want), int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	wantF := &File{
		Metadata: map[string]string{"z": "last", "format": "pt", "<&>": "é"},
		Tensors: []Tensor{
			{Name: "a", Shape: []int{1, 1}, Data: []float32{1.5}},
			{Name: "b", Shape: []int{2}, Data: []float32{3, 4}},
			{Name: "empty", Shape: []int{0, 3}, Data: []float32{}},
			{Name: "scalar", Shape: []int{}, Data: []float32{-2}},
		},
	}
	if !reflect.DeepEqual(f, wantF) {
		t.Fatalf("read back %+v, want %+v", f, wantF)
	}
	if tt, ok := f.Tensor("b"); !ok || tt.Data[1] != 4 {
		t.Fatalf("Tensor(b) = %v, %v", tt, ok)
	}
	if _, ok := f.Tensor("c"); ok {
		t.Fatal("Tensor(c) found")
	}
}

func TestWriteRejects(t *testing.T) {
	for _, c := range []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"empty name", []Tensor{{Shape: []int{1}, Data: []float32{1}}}, "empty name"},
		{"metadata name", []Tensor{{Name: "__metadata__", Shape: []int{1}, Data: []float32{1}}}, "reserved"},
		{"duplicate", []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}, {Name: "x", Shape: []int{1}, Data: []float32{1}}}, "twice"},
		{"shape", []Tensor{{Name: "x", Shape: []int{2, 2}, Data: []float32{1}}}, "holds 4 elements but Data has 1"},
		{"negative", []Tensor{{Name: "x", Shape: []int{-1}, Data: nil}}, "negative"},
	} {
		err := Write(&bytes.Buffer{}, c.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestReadHuggingFaceVectors(t *testing.T) {
	// The unpadded header of older releases (test_simple.py: '<' = 60 bytes), I32: the
	// header is valid but I32 does not convert.
	old := []byte("<\x00\x00\x00\x00\x00\x00\x00" + `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}` + strings.Repeat("\x00", 16))
	_, err := Read(bytes.NewReader(old), int64(len(old)))
	if err == nil || !strings.Contains(err.Error(), "dtype I32 is not supported") {
		t.Fatalf("I32: err %v", err)
	}
	meta, infos, err := ReadHeader(bytes.NewReader(old), int64(len(old)))
	if err != nil || meta != nil || len(infos) != 1 || infos[0].DType != "I32" || infos[0].Offset != 68 || infos[0].Size != 16 {
		t.Fatalf("ReadHeader: %v %+v %v", meta, infos, err)
	}
	// The same with metadata ('f' = 102 bytes, padded), as F32.
	withMeta := []byte("f\x00\x00\x00\x00\x00\x00\x00" + `{"__metadata__":{"framework":"pt"},"test1":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}       ` + string(le32(1, 2, 3, 4)))
	f, err := Read(bytes.NewReader(withMeta), int64(len(withMeta)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["framework"] != "pt" || !reflect.DeepEqual(f.Tensors[0].Data, []float32{1, 2, 3, 4}) {
		t.Fatalf("got %+v", f)
	}
}

func TestReadConvertsDTypes(t *testing.T) {
	var data []byte
	// F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), 2^-14·(1023/1024)... , +Inf
	for _, h := range []uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x7c00} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	// BF16: 1, -0.5
	for _, h := range []uint16{0x3f80, 0xbf00} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	// F64: 0.1 (rounds to float32), -3
	for _, x := range []float64{0.1, -3} {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(x))
	}
	header := `{"h":{"dtype":"F16","shape":[6],"data_offsets":[0,12]},` +
		`"b":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]},` +
		`"d":{"dtype":"F64","shape":[2],"data_offsets":[16,32]}}`
	file := hfFile(header, data)
	f, err := Read(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{
		"h": {1, -2, 65504, float32(math.Ldexp(1, -24)), float32(math.Ldexp(1023, -24)), float32(math.Inf(1))},
		"b": {1, -0.5},
		"d": {float32(0.1), -3},
	}
	if len(f.Tensors) != 3 || f.Tensors[0].Name != "b" {
		t.Fatalf("tensors not sorted by name: %+v", f.Tensors)
	}
	for _, tt := range f.Tensors {
		if !reflect.DeepEqual(tt.Data, want[tt.Name]) {
			t.Errorf("%s: got %v, want %v", tt.Name, tt.Data, want[tt.Name])
		}
	}
}

func TestHalfToFloat32Exhaustive(t *testing.T) {
	// Every binary16 value against a direct evaluation of the definition.
	for h := 0; h < 1<<16; h++ {
		got := HalfToFloat32(uint16(h))
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e, m := (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0x1f && m == 0:
			want = math.Inf(int(sign))
		case e == 0x1f:
			if !math.IsNaN(float64(got)) || math.Float32bits(got)>>31 != uint32(h>>15) {
				t.Fatalf("%#04x: got %v, want a NaN of the same sign", h, got)
			}
			continue
		case e == 0:
			want = sign * math.Ldexp(float64(m), -24)
		default:
			want = sign * math.Ldexp(float64(1024+m), e-25)
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign < 0) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

// TestReadErrorIsStable: a header entry with several unknown fields gets one message,
// naming the first in name order (it named one drawn by Go's map order, so that two
// reads of one file could say different things).
func TestReadErrorIsStable(t *testing.T) {
	file := hfFile(`{"a":{"zz":1,"yy":2,"xx":3,"ww":4,"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, le32(1))
	for range 50 {
		_, err := Read(bytes.NewReader(file), int64(len(file)))
		if err == nil || !strings.Contains(err.Error(), `unknown field "ww"`) {
			t.Fatalf("got %v, want the unknown field \"ww\" named", err)
		}
	}
}

// TestReadMetadataErrorIsStable: of several __metadata__ values that are not strings,
// the message names the first key in key order, every time (map order named any: found
// by FuzzReadInto, whose ReadInto and Read named two different ones).
func TestReadMetadataErrorIsStable(t *testing.T) {
	file := hfFile(`{"__metadata__":{"zz":1,"yy":2,"xx":3,"ww":4,"b":5,"a":6}}`, nil)
	for range 50 {
		_, err := Read(bytes.NewReader(file), int64(len(file)))
		if err == nil || !strings.Contains(err.Error(), `value of "a" is not a string`) {
			t.Fatalf("got %v, want the value of \"a\" named", err)
		}
	}
}

func TestReadRejectsMalformed(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	good := hfFile(ok, le32(1, 2))
	lenBytes := func(n uint64, rest string) []byte { return append(binary.LittleEndian.AppendUint64(nil, n), rest...) }
	entry := func(dtype, shape, offsets string) string {
		return `{"dtype":` + dtype + `,"shape":` + shape + `,"data_offsets":` + offsets + `}`
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than the 8-byte header length"},
		{"huge header", lenBytes(MaxHeaderSize+1, "{}"), "over the"},
		{"header past end", lenBytes(100, "{}"), "runs past the end"},
		{"tiny header", lenBytes(1, "{"), "too short"},
		{"not an object", hfFile(`["a"]`, nil), "does not start with '{'"},
		{"bad utf8", hfFile("{\"\xff\":1}", nil), "not valid UTF-8"},
		{"bad json", hfFile(`{"a":}`, nil), "header at byte"},
		{"unclosed", hfFile(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}`, le32(1)), "header at byte"},
		{"trailing garbage", hfFile(`{}x`, nil), "after its JSON object"},
		{"duplicate", hfFile(`{"a":`+entry(`"F32"`, `[1]`, `[0,4]`)+`,"a":`+entry(`"F32"`, `[1]`, `[4,8]`)+`}`, le32(1, 2)), `key "a" appears twice`},
		{"no dtype", hfFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, le32(1)), `"dtype" is missing`},
		{"no shape", hfFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, le32(1)), `"shape" is missing`},
		{"no offsets", hfFile(`{"a":{"dtype":"F32","shape":[1]}}`, le32(1)), `"data_offsets" is missing`},
		{"extra field", hfFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, le32(1)), "unknown field"},
		{"unknown dtype", hfFile(`{"a":`+entry(`"F33"`, `[1]`, `[0,4]`)+`}`, le32(1)), `unknown dtype "F33"`},
		{"negative dim", hfFile(`{"a":`+entry(`"F32"`, `[-1]`, `[0,4]`)+`}`, le32(1)), "negative dimension"},
		{"float dim", hfFile(`{"a":`+entry(`"F32"`, `[1.5]`, `[0,4]`)+`}`, le32(1)), "shape: json"},
		{"case-folded field", hfFile(`{"a":{"dtype":"F32","Shape":[1],"data_offsets":[0,4]}}`, le32(1)), `unknown field "Shape"`},
		{"empty name", hfFile(`{"":`+entry(`"F32"`, `[1]`, `[0,4]`)+`}`, le32(1)), "empty name"},
		{"null dtype", hfFile(`{"a":`+entry(`null`, `[1]`, `[0,4]`)+`}`, le32(1)), `"dtype" is missing`},
		{"overflow", hfFile(`{"a":`+entry(`"F32"`, `[4294967296,4294967296]`, `[0,4]`)+`}`, le32(1)), "overflows"},
		{"three offsets", hfFile(`{"a":`+entry(`"F32"`, `[1]`, `[0,4,8]`)+`}`, le32(1)), "has 3 numbers"},
		{"reversed offsets", hfFile(`{"a":`+entry(`"F32"`, `[0]`, `[4,0]`)+`}`, le32(1)), "not an ordered pair"},
		{"size mismatch", hfFile(`{"a":`+entry(`"F32"`, `[2]`, `[0,4]`)+`}`, le32(1)), "hold 4 bytes but shape [2] of F32 needs 8"},
		{"gap", hfFile(`{"a":`+entry(`"F32"`, `[1]`, `[4,8]`)+`}`, le32(1, 2)), "a gap in the data"},
		{"overlap", hfFile(`{"a":`+entry(`"F32"`, `[2]`, `[0,8]`)+`,"b":`+entry(`"F32"`, `[1]`, `[4,8]`)+`}`, le32(1, 2)), "an overlap in the data"},
		{"truncated data", good[:len(good)-1], "runs past the end of the 71-byte file"},
		{"trailing data", append(append([]byte{}, good...), 0), "trailing bytes"},
		{"metadata not strings", hfFile(`{"__metadata__":{"a":1}}`, nil), `value of "a" is not a string`},
		{"unsupported dtype", hfFile(`{"a":`+entry(`"I64"`, `[1]`, `[0,8]`)+`}`, make([]byte, 8)), "dtype I64 is not supported"},
	} {
		_, err := Read(bytes.NewReader(c.file), int64(len(c.file)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
			continue
		}
		if c.name != "unsupported dtype" && !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v does not match ErrFormat", c.name, err)
		}
	}
	if _, err := Read(bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatalf("the good file: %v", err)
	}
}

func TestFileRoundTripNamesThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	tensors := []Tensor{{Name: "w", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, float32(math.NaN())}}}
	if err := WriteFile(path, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range f.Tensors[0].Data {
		if math.Float32bits(x) != math.Float32bits(tensors[0].Data[i]) {
			t.Fatalf("element %d: %v != %v", i, x, tensors[0].Data[i])
		}
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-3], 0o666)
	_, err = ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `tensor "w"`) {
		t.Fatalf("truncated file: err %v, want one naming the path and the tensor", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), tensors, nil); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

// TestReadIntoSkipsAnyDType: a tensor that dst skips may be of any dtype (an I64
// position-id or BOOL mask buffer beside the weights, as ReadFileExcept leaves out);
// ReadInto refused an I64 or BOOL tensor before dst could skip it. One dst asks for is
// refused, naming it and its dtype, and dst is told its dtype first.
func TestReadIntoSkipsAnyDType(t *testing.T) {
	file := hfFile(`{"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},"mask":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]},`+
		`"w":{"dtype":"F32","shape":[2],"data_offsets":[19,27]},"u":{"dtype":"U8","shape":[1],"data_offsets":[27,28]}}`,
		append(append(append(make([]byte, 16), 1, 0, 1), le32(1.5, -2)...), 7))
	var seen []string
	w := make([]float32, 2)
	_, err := ReadInto(bytes.NewReader(file), int64(len(file)), func(in Info) ([]float32, error) {
		seen = append(seen, in.Name+":"+in.DType)
		if in.Name == "w" {
			return w, nil
		}
		return nil, nil
	})
	if err != nil || !reflect.DeepEqual(w, []float32{1.5, -2}) {
		t.Fatalf("ReadInto skipping I64, BOOL and U8 tensors: %v, w = %v", err, w)
	}
	if want := []string{"ids:I64", "mask:BOOL", "w:F32", "u:U8"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("dst saw %v, want %v", seen, want)
	}
	if f, err := ReadFileExcept(writeTemp(t, file), func(name string) bool { return name != "w" }); err != nil || len(f.Tensors) != 1 {
		t.Errorf("ReadFileExcept of the same file: %v", err)
	}

	_, err = ReadInto(bytes.NewReader(file), int64(len(file)), func(in Info) ([]float32, error) {
		if in.Name == "mask" {
			return make([]float32, 3), nil
		}
		return nil, nil
	})
	if err == nil || !strings.Contains(err.Error(), `tensor "mask" (header byte`) || !strings.Contains(err.Error(), "dtype BOOL is not supported") {
		t.Errorf("ReadInto asked for a BOOL tensor: %v, want it and its dtype named", err)
	}
}

// writeTemp writes data to a file in a test directory and returns its path.
func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
