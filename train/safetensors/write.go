package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
)

// Tensor is one named tensor; Data holds its elements in row-major order (stored as F32).
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// metadataKey is the header key reserved for the free-form string metadata.
const metadataKey = "__metadata__"

// Write writes tensors as a safetensors file: all as F32, laid out sorted by name (as the
// Hugging Face library orders tensors of one dtype), the header's "__metadata__" (omitted
// when metadata is nil) first, the header padded with spaces to a multiple of 8 bytes.
// Names must be unique and non-empty, and each tensor's shape must account for its data.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	if err := writeTensors(w, tensors, metadata); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// Layout is one tensor of a file WriteFunc writes: its name and shape (stored as F32).
type Layout struct {
	Name  string
	Shape []int
}

// WriteFunc writes the file Write writes for tensors of these names and shapes
// (byte for byte: the same header, the tensors in the same order, sorted by name)
// without holding their values: it asks fill for them one tensor at a time, in
// file order, with i the tensor's index in tensors and dst a buffer of exactly its
// element count to fill. dst is one buffer of the largest tensor's size, reused for
// every tensor: what fill put in it is written before the next call. An error of
// fill is returned as it is, and nothing more is written (the file is then cut
// short, as a failed write leaves it).
func WriteFunc(w io.Writer, tensors []Layout, metadata map[string]string, fill func(i int, dst []float32) error) error {
	counts := make([]int, len(tensors))
	largest := 0
	for i, t := range tensors {
		n, err := elements(t.Name, t.Shape)
		if err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
		counts[i] = int(n)
		largest = max(largest, counts[i])
	}
	var buf []float32 // made at the first tensor: a file that fails in its header needs none
	var fillErr error
	err := write(w, tensors, counts, metadata, func(i int) ([]float32, error) {
		if buf == nil {
			buf = make([]float32, largest)
		}
		dst := buf[:counts[i]]
		if err := fill(i, dst); err != nil {
			fillErr = err
			return nil, err
		}
		return dst, nil
	})
	if err != nil && err == fillErr {
		return err
	}
	if err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// write writes the file of tensors (their layouts, and counts[i] elements for each)
// to w, taking each tensor's values from values as it comes to it; errors are not
// yet prefixed by the package and file, and values' are returned as they are.
func write(w io.Writer, tensors []Layout, counts []int, metadata map[string]string, values func(i int) ([]float32, error)) error {
	header, order, err := buildHeader(tensors, counts, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	bw.Write(n[:])
	bw.Write(header)
	var buf []byte
	for _, i := range order {
		data, err := values(i)
		if err != nil {
			return err
		}
		if littleEndian {
			if _, err := bw.Write(bytesOf(data)); err != nil {
				return fmt.Errorf("tensor %q: %w", tensors[i].Name, err)
			}
			continue
		}
		for len(data) > 0 {
			k := min(len(data), 1<<16)
			buf = buf[:0]
			for _, x := range data[:k] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("tensor %q: %w", tensors[i].Name, err)
			}
			data = data[k:]
		}
	}
	return bw.Flush()
}

// writeTensors is Write with errors not yet prefixed by the package and file.
func writeTensors(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	layouts := make([]Layout, len(tensors))
	counts := make([]int, len(tensors))
	for i, t := range tensors {
		n, err := elements(t.Name, t.Shape)
		if err != nil {
			return err
		}
		if n != int64(len(t.Data)) {
			return fmt.Errorf("tensor %q: shape %v holds %d elements but Data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		layouts[i], counts[i] = Layout{Name: t.Name, Shape: t.Shape}, len(t.Data)
	}
	return write(w, layouts, counts, metadata, func(i int) ([]float32, error) { return tensors[i].Data, nil })
}

// elements is the element count of a tensor of shape (name for the errors).
func elements(name string, shape []int) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor %q has a negative dimension in shape %v", name, shape)
		}
		if d != 0 && n > math.MaxInt64/8/int64(d) {
			return 0, fmt.Errorf("tensor %q: shape %v is too large", name, shape)
		}
		n *= int64(d)
	}
	return n, nil
}

// WriteFile writes tensors to path with Write (a plain create-and-write: callers wanting
// an atomic, durable file write elsewhere and rename, as package checkpoint does).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := writeTensors(f, tensors, metadata); err != nil {
		f.Close()
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	return nil
}

// buildHeader checks tensors' names (their shapes are checked, and counts[i] is
// tensor i's element count) and returns the padded JSON header and the order
// (indexes into tensors, sorted by name) in which their data follows it.
func buildHeader(tensors []Layout, counts []int, metadata map[string]string) ([]byte, []int, error) {
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tensors[order[a]].Name < tensors[order[b]].Name })
	for k, i := range order {
		t := &tensors[i]
		switch {
		case t.Name == "":
			return nil, nil, fmt.Errorf("tensor %d has an empty name", i)
		case t.Name == metadataKey:
			return nil, nil, fmt.Errorf("tensor name %q is reserved for the metadata", t.Name)
		case k > 0 && tensors[order[k-1]].Name == t.Name:
			return nil, nil, fmt.Errorf("tensor name %q appears twice", t.Name)
		}
	}

	var h bytes.Buffer
	h.WriteByte('{')
	str := func(s string) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(s) // a string always encodes
		h.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	first := true
	comma := func() {
		if !first {
			h.WriteByte(',')
		}
		first = false
	}
	if metadata != nil {
		comma()
		str(metadataKey)
		h.WriteString(":{")
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for j, k := range keys {
			if j > 0 {
				h.WriteByte(',')
			}
			str(k)
			h.WriteByte(':')
			str(metadata[k])
		}
		h.WriteByte('}')
	}
	var off int64
	for _, i := range order {
		t := &tensors[i]
		comma()
		str(t.Name)
		h.WriteString(`:{"dtype":"F32","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		end := off + 4*int64(counts[i])
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	return h.Bytes(), order, nil
}
