package train

import (
	"testing"

	"gptkit/kernels"
)

// countingBackend is a device-like backend that only counts what is allocated:
// the model's memory is measured without the memory.
type countingBackend struct {
	fakeDevice
	next uintptr
}

func (c *countingBackend) Alloc(what string, dt kernels.DType, n int) (kernels.Tensor, error) {
	size := n * dt.Size()
	c.next += uintptr(size+511) &^ 255
	return kernels.NewTensor(kernels.NewBuffer(c, c.next, nil, size, what), dt, n), nil
}

func (c *countingBackend) Free(kernels.Tensor) {}

// oldActivationBytes is what the old design (before device tensors) allocated for
// GPT-2 124M's activations at B=8, T=1024 in float32, counted at commit b5012e9
// with a backend that summed Alloc's sizes during Model.Reserve(8, 1024, true):
// 13,943,537,664 bytes (12.99 GiB), of which the attention probabilities (B,NH,T,T)
// were 4.83 GB and the logits and probabilities (B·T, Vp) 3.30 GB.
const oldActivationBytes = 13_943_537_664

// TestActivationMemoryGPT2: GPT-2 124M's activations at B=8, T=1024 need less
// than half of the old design's in float32 (and about half again in bfloat16),
// as the model counts its allocations.
func TestActivationMemoryGPT2(t *testing.T) {
	mc := ModelConfig{VocabSize: 50257, PaddedVocab: 50304, NLayer: 12, NHead: 12, NEmbd: 768, BlockSize: 1024}
	for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16} {
		be := &countingBackend{}
		m, err := NewModelDType(be, mc, dt)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AllocGrads(); err != nil {
			t.Fatal(err)
		}
		if err := m.Reserve(8, 1024, true); err != nil {
			t.Fatal(err)
		}
		u := m.Memory()
		t.Logf("%s: activations %s (%d bytes, %.1f%% of the old design's %s), params %s, grads %s",
			dt, kernels.GiB(u.Activations), u.Activations, 100*float64(u.Activations)/oldActivationBytes,
			kernels.GiB(oldActivationBytes), kernels.GiB(u.Params), kernels.GiB(u.Grads))
		if dt == kernels.Float32 && !(u.Activations < oldActivationBytes/2) {
			t.Errorf("float32 activations %d bytes, want < half of %d", u.Activations, int64(oldActivationBytes))
		}
		if dt == kernels.BFloat16 && !(u.Activations < oldActivationBytes/4) {
			t.Errorf("bfloat16 activations %d bytes, want < a quarter of %d", u.Activations, int64(oldActivationBytes))
		}
	}
}
