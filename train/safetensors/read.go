package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation does (100 MB).
const MaxHeaderSize = 100_000_000

// ErrFormat is matched (errors.Is) by the errors Read returns for malformed files.
var ErrFormat = errors.New("not a valid safetensors file")

// File is a read safetensors file.
type File struct {
	// Metadata is the header's "__metadata__" (nil when absent).
	Metadata map[string]string
	// Tensors are sorted by name (which, for files written by this package or the
	// Hugging Face library from tensors of one dtype, is also their order in the file).
	Tensors []Tensor
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i := sort.Search(len(f.Tensors), func(i int) bool { return f.Tensors[i].Name >= name })
	if i < len(f.Tensors) && f.Tensors[i].Name == name {
		return &f.Tensors[i], true
	}
	return nil, false
}

// entry is one tensor's header entry.
type entry struct {
	name       string
	dtype      string
	shape      []int
	begin, end int64 // absolute file offsets of the data
	at         int64 // file offset of the entry's key in the header, for messages
}

// Read reads a safetensors file of size bytes from r, converting F32, F16, BF16 and F64
// tensors to float32 (other dtypes are an error). It validates the file strictly: a header
// of at most MaxHeaderSize bytes of UTF-8 JSON object (trailing spaces allowed), each
// tensor's dtype, shape and data_offsets present and consistent, no duplicate names, and
// data ranges that are contiguous from the end of the header and cover the rest of the
// file exactly. Errors match ErrFormat for malformed files and name the tensor and the
// byte offset.
func Read(r io.ReaderAt, size int64) (*File, error) {
	f, err := read(r, size, nil)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// ReadExcept is Read leaving out the tensors skip names, whatever their dtype (their
// bytes are not read).
func ReadExcept(r io.ReaderAt, size int64, skip func(name string) bool) (*File, error) {
	f, err := read(r, size, skip)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// ReadFile reads the safetensors file at path (see Read).
func ReadFile(path string) (*File, error) { return ReadFileExcept(path, nil) }

// ReadFileExcept is ReadFile leaving out the tensors skip names (whatever their dtype:
// a Hugging Face GPT-2 file's uint8 or bool causal-mask buffers, say).
func ReadFileExcept(path string, skip func(name string) bool) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := read(fh, fi.Size(), skip)
	if err != nil {
		return nil, fmt.Errorf("safetensors: read %s: %w", path, err)
	}
	return f, nil
}

// ReadHeader reads and validates only the header of a file of size bytes: the metadata
// and each tensor's name, dtype and shape, without reading the data.
func ReadHeader(r io.ReaderAt, size int64) (metadata map[string]string, infos []Info, err error) {
	meta, entries, err := readHeader(r, size)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	for _, e := range entries {
		infos = append(infos, Info{Name: e.name, DType: e.dtype, Shape: e.shape, Offset: e.begin, Size: e.end - e.begin})
	}
	sort.Slice(infos, func(a, b int) bool { return infos[a].Name < infos[b].Name })
	return meta, infos, nil
}

// Info describes one tensor of a file's header.
type Info struct {
	Name   string
	DType  string // "F32", "F16", "BF16", "I64", ...
	Shape  []int
	Offset int64 // absolute file offset of the data
	Size   int64 // bytes
}

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
}

func read(r io.ReaderAt, size int64, skip func(string) bool) (*File, error) {
	meta, entries, err := readHeader(r, size)
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: meta, Tensors: make([]Tensor, 0, len(entries))}
	var buf []byte
	for _, e := range entries {
		if skip != nil && skip(e.name) {
			continue
		}
		if !floatDTypes[e.dtype] {
			return nil, fmt.Errorf("tensor %q (header byte %d): dtype %s is not supported (only F32, F16, BF16 and F64 convert to float32)", e.name, e.at, e.dtype)
		}
		n := (e.end - e.begin) / dtypeSize[e.dtype]
		t := Tensor{Name: e.name, Shape: e.shape, Data: make([]float32, n)}
		if err := readValues(r, t.Data, e, &buf); err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, t)
	}
	sort.Slice(f.Tensors, func(a, b int) bool { return f.Tensors[a].Name < f.Tensors[b].Name })
	return f, nil
}

// readValues reads the values of tensor e into d (its element count), converted to
// float32: an F32 tensor straight into d, the others in chunks of 64K elements through
// *buf (made or grown as needed).
func readValues(r io.ReaderAt, d []float32, e entry, buf *[]byte) error {
	if e.dtype == "F32" && littleEndian {
		if err := readFull(r, bytesOf(d), e.begin); err != nil {
			return fmt.Errorf("tensor %q: reading bytes [%d,%d): %w", e.name, e.begin, e.end, err)
		}
		return nil
	}
	es := dtypeSize[e.dtype]
	n := int64(len(d))
	const chunk = 1 << 16 // elements per read
	for j := int64(0); j < n; j += chunk {
		k := min(chunk, n-j)
		if int64(cap(*buf)) < k*es {
			*buf = make([]byte, chunk*es)
		}
		b := (*buf)[:k*es]
		if err := readFull(r, b, e.begin+j*es); err != nil {
			return fmt.Errorf("tensor %q: reading bytes [%d,%d): %w", e.name, e.begin+j*es, e.begin+(j+k)*es, err)
		}
		decode(d[j:j+k], b, e.dtype)
	}
	return nil
}

// readFull reads exactly len(b) bytes at off.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readHeader reads and validates the header; entries come in data order.
func readHeader(r io.ReaderAt, size int64) (map[string]string, []entry, error) {
	if size < 8 {
		return nil, nil, formatErr("%d bytes is shorter than the 8-byte header length", size)
	}
	var nb [8]byte
	if err := readFull(r, nb[:], 0); err != nil {
		return nil, nil, fmt.Errorf("reading the header length: %w", err)
	}
	hn := binary.LittleEndian.Uint64(nb[:])
	switch {
	case hn > MaxHeaderSize:
		return nil, nil, formatErr("header length %d (bytes 0-7) is over the %d-byte limit", hn, MaxHeaderSize)
	case int64(hn) > size-8:
		return nil, nil, formatErr("header length %d (bytes 0-7) runs past the end of the %d-byte file (truncated?)", hn, size)
	case hn < 2:
		return nil, nil, formatErr("header length %d (bytes 0-7) is too short for a JSON object", hn)
	}
	header := make([]byte, hn)
	if err := readFull(r, header, 8); err != nil {
		return nil, nil, fmt.Errorf("reading the %d-byte header: %w", hn, err)
	}
	dataStart := 8 + int64(hn)
	if header[0] != '{' {
		return nil, nil, formatErr("header (byte 8) does not start with '{'")
	}
	if !utf8.Valid(header) {
		return nil, nil, formatErr("header (bytes 8-%d) is not valid UTF-8", dataStart-1)
	}

	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	at := func() int64 { return 8 + dec.InputOffset() }
	if _, err := dec.Token(); err != nil { // '{'
		return nil, nil, formatErr("header at byte %d: %v", at(), err)
	}
	var meta map[string]string
	var entries []entry
	seen := map[string]bool{}
	for dec.More() {
		keyAt := at()
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, formatErr("header at byte %d: %v", keyAt, err)
		}
		name := tok.(string) // object keys are always strings
		if name == "" {
			return nil, nil, formatErr("header at byte %d: a tensor has an empty name", keyAt)
		}
		if seen[name] {
			return nil, nil, formatErr("header at byte %d: key %q appears twice", keyAt, name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, formatErr("header at byte %d: value of %q: %v", keyAt, name, err)
		}
		if name == metadataKey {
			if meta, err = parseMetadata(raw); err != nil {
				return nil, nil, formatErr("header at byte %d: %s: %v", keyAt, metadataKey, err)
			}
			continue
		}
		e, err := parseEntry(raw)
		if err != nil {
			return nil, nil, formatErr("tensor %q (header byte %d): %v", name, keyAt, err)
		}
		e.name, e.at = name, keyAt
		e.begin += dataStart
		e.end += dataStart
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, nil, formatErr("header at byte %d: %v", at(), err)
	}
	if rest := header[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, nil, formatErr("header has bytes after its JSON object at byte %d (only space padding may follow)", at())
	}

	sort.SliceStable(entries, func(a, b int) bool {
		if entries[a].begin != entries[b].begin {
			return entries[a].begin < entries[b].begin
		}
		return entries[a].end < entries[b].end
	})
	pos := dataStart
	for _, e := range entries {
		if e.begin != pos {
			what := "a gap"
			if e.begin < pos {
				what = "an overlap"
			}
			return nil, nil, formatErr("tensor %q (header byte %d): data starts at byte %d but the previous tensor ends at byte %d (%s in the data)", e.name, e.at, e.begin, pos, what)
		}
		if e.end > size {
			return nil, nil, formatErr("tensor %q (header byte %d): data [%d,%d) runs past the end of the %d-byte file (truncated?)", e.name, e.at, e.begin, e.end, size)
		}
		pos = e.end
	}
	if pos != size {
		return nil, nil, formatErr("the tensors' data ends at byte %d but the file has %d bytes (truncated or trailing bytes)", pos, size)
	}
	return meta, entries, nil
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("want an object of strings: %v", err)
	}
	meta := make(map[string]string, len(m))
	// In key order: of several bad values, the message names the same one every time
	// (map order named any, so two reads of one file could say different things).
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("value of %q is not a string", k)
		}
		meta[k] = s
	}
	return meta, nil
}

// parseEntry parses {"dtype","shape","data_offsets"}; offsets stay relative to the data.
func parseEntry(raw json.RawMessage) (entry, error) {
	// Fields by exact name (encoding/json would match struct fields case-insensitively).
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return entry{}, fmt.Errorf("want {\"dtype\", \"shape\", \"data_offsets\"}: %v", err)
	}
	var v struct {
		DType       *string
		Shape       *[]int64
		DataOffsets *[]int64
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) { // (one message for a file, however the map iterates)
		raw := fields[k]
		var dst any
		switch k {
		case "dtype":
			dst = &v.DType
		case "shape":
			dst = &v.Shape
		case "data_offsets":
			dst = &v.DataOffsets
		default:
			return entry{}, fmt.Errorf("unknown field %q (want dtype, shape and data_offsets)", k)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return entry{}, fmt.Errorf("%s: %v", k, err)
		}
	}
	switch {
	case v.DType == nil:
		return entry{}, errors.New(`"dtype" is missing`)
	case v.Shape == nil:
		return entry{}, errors.New(`"shape" is missing`)
	case v.DataOffsets == nil:
		return entry{}, errors.New(`"data_offsets" is missing`)
	case len(*v.DataOffsets) != 2:
		return entry{}, fmt.Errorf(`"data_offsets" has %d numbers, want [begin, end]`, len(*v.DataOffsets))
	}
	es, ok := dtypeSize[*v.DType]
	if !ok {
		return entry{}, fmt.Errorf("unknown dtype %q", *v.DType)
	}
	e := entry{dtype: *v.DType, shape: make([]int, len(*v.Shape))}
	n := int64(1)
	for i, d := range *v.Shape {
		if d < 0 {
			return entry{}, fmt.Errorf("negative dimension in shape %v", *v.Shape)
		}
		if d != 0 && n > math.MaxInt64/es/d || d > math.MaxInt {
			return entry{}, fmt.Errorf("shape %v overflows", *v.Shape)
		}
		n *= d
		e.shape[i] = int(d)
	}
	begin, end := (*v.DataOffsets)[0], (*v.DataOffsets)[1]
	if begin < 0 || end < begin {
		return entry{}, fmt.Errorf("data_offsets [%d,%d] are not an ordered pair of non-negative offsets", begin, end)
	}
	if end-begin != n*es {
		return entry{}, fmt.Errorf("data_offsets [%d,%d] hold %d bytes but shape %v of %s needs %d", begin, end, end-begin, *v.Shape, *v.DType, n*es)
	}
	if end > math.MaxInt64-MaxHeaderSize-8 {
		return entry{}, fmt.Errorf("data_offsets [%d,%d] are too large", begin, end)
	}
	e.begin, e.end = begin, end
	return e, nil
}
