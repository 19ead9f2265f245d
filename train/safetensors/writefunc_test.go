package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestWriteFuncMatchesWrite: WriteFunc writes Write's file byte for byte (header,
// order, values, NaN payloads and signed zeros included) for random sets of tensors
// (names that share prefixes, repeat in another case or sort differently from their
// order; empty, scalar and 0-sized shapes; metadata or none), asking for each tensor
// once, in the file's order, in one buffer of the largest tensor's size.
func TestWriteFuncMatchesWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "b", "A", "é", "h.0", "h.1", "h.10", "h.2", ".", "_", "exp_avg.", "exp_avg_sq.", "wte", "\"q\"", "<&>"}
	for trial := range 300 {
		var tensors []Tensor
		seen := map[string]bool{}
		for range rng.IntN(12) {
			var name string
			for range 1 + rng.IntN(3) {
				name += parts[rng.IntN(len(parts))]
			}
			if seen[name] || name == metadataKey {
				continue
			}
			seen[name] = true
			shape := make([]int, rng.IntN(4))
			n := 1
			for j := range shape {
				shape[j] = rng.IntN(5)
				if rng.IntN(40) == 0 {
					shape[j] = 300 // now and then one larger than bufio's 64K conversions
				}
				n *= shape[j]
			}
			data := make([]float32, n)
			for j := range data {
				switch rng.IntN(8) {
				case 0:
					data[j] = math.Float32frombits(0x7fc00000 | rng.Uint32()&0x3fffff) // NaN payloads
				case 1:
					data[j] = float32(math.Copysign(0, -1))
				default:
					data[j] = float32(rng.NormFloat64())
				}
			}
			tensors = append(tensors, Tensor{Name: name, Shape: shape, Data: data})
		}
		var meta map[string]string
		if rng.IntN(2) == 0 {
			meta = map[string]string{"step": fmt.Sprint(trial), "format": "pt"}
		}
		var want bytes.Buffer
		if err := Write(&want, tensors, meta); err != nil {
			t.Fatal(err)
		}
		layouts := make([]Layout, len(tensors))
		largest := 0
		for i, ts := range tensors {
			layouts[i] = Layout{Name: ts.Name, Shape: ts.Shape}
			largest = max(largest, len(ts.Data))
		}
		var got bytes.Buffer
		var asked []string
		err := WriteFunc(&got, layouts, meta, func(i int, dst []float32) error {
			asked = append(asked, tensors[i].Name)
			if len(dst) != len(tensors[i].Data) || cap(dst) != largest {
				t.Fatalf("trial %d: tensor %q of %d values: a buffer of len %d, cap %d (want cap %d)", trial, tensors[i].Name, len(tensors[i].Data), len(dst), cap(dst), largest)
			}
			clear(dst[:cap(dst)]) // (what the last tensor left must not matter)
			copy(dst, tensors[i].Data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("trial %d: WriteFunc wrote\n%q\nWrite\n%q", trial, got.Bytes(), want.Bytes())
		}
		if !slices.IsSorted(asked) || len(asked) != len(tensors) {
			t.Fatalf("trial %d: asked for %q, want each of the %d tensors once, sorted by name", trial, asked, len(tensors))
		}
	}
}

// TestWriteFuncErrors: fill's error comes back as it is, with nothing written after
// it; a layout Write would refuse is refused the same way, before fill is asked.
func TestWriteFuncErrors(t *testing.T) {
	boom := errors.New("boom")
	layouts := []Layout{{Name: "b", Shape: []int{3}}, {Name: "a", Shape: []int{2}}}
	var buf bytes.Buffer
	calls := 0
	err := WriteFunc(&buf, layouts, nil, func(i int, dst []float32) error {
		calls++
		if layouts[i].Name == "b" {
			return boom
		}
		return nil
	})
	if err != boom || calls != 2 {
		t.Fatalf("WriteFunc with a fill that fails at the second tensor: %v after %d calls, want boom after 2", err, calls)
	}
	for _, bad := range [][]Layout{
		{{Name: "", Shape: []int{1}}},
		{{Name: "x", Shape: []int{-1}}},
		{{Name: "x", Shape: []int{1}}, {Name: "x", Shape: []int{2}}},
		{{Name: metadataKey, Shape: []int{1}}},
	} {
		ts := make([]Tensor, len(bad))
		for i, l := range bad {
			ts[i] = Tensor{Name: l.Name, Shape: l.Shape}
			if l.Shape[0] > 0 {
				ts[i].Data = make([]float32, l.Shape[0])
			}
		}
		werr := Write(&buf, ts, nil)
		err := WriteFunc(&buf, bad, nil, func(int, []float32) error {
			t.Fatalf("%v: fill called", bad)
			return nil
		})
		if err == nil || werr == nil || err.Error() != werr.Error() || !strings.HasPrefix(err.Error(), "safetensors: write: ") {
			t.Errorf("%v: WriteFunc: %v; Write: %v (want the same error)", bad, err, werr)
		}
	}
}
