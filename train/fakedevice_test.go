package train

import (
	"fmt"
	"sync"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

// fakeDevice is a kernels.Backend that behaves like a GPU for the trainer's
// purposes, on the reference kernels: its memory is not host-addressable (the
// trainer must Upload and Download), its ops are queued and run in order only
// when the host waits (Sync, Download), like a stream, and it counts its live
// bytes and can run out of them. With visible, its tensors expose their host
// memory as CUDA managed memory did (still asynchronous): the old design's
// hazard.
type fakeDevice struct {
	ref     kernels.Backend
	visible bool
	limit   int64 // bytes; 0: none

	mu    sync.Mutex
	mem   map[uintptr]kernels.Tensor // device address → the reference backend's memory
	next  uintptr
	live  int64
	peak  int64
	queue []func()
}

func newFakeDevice() *fakeDevice {
	return &fakeDevice{ref: ref.New(), mem: map[uintptr]kernels.Tensor{}, next: 1 << 30}
}

var _ kernels.Backend = (*fakeDevice)(nil)

func (d *fakeDevice) Name() string { return "fake device" }

func (d *fakeDevice) Alloc(what string, dt kernels.DType, n int) (kernels.Tensor, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	size := int64(n * dt.Size())
	if d.limit > 0 && d.live+size > d.limit {
		return kernels.Tensor{}, &kernels.OutOfMemoryError{Device: "fake device", What: what, Bytes: size, Free: d.limit - d.live, Total: d.limit}
	}
	t, _ := d.ref.Alloc(what, dt, n)
	addr := d.next
	d.next += uintptr(size+511) &^ 255
	d.mem[addr] = t
	d.live += size
	d.peak = max(d.peak, d.live)
	var host []byte
	if d.visible {
		host = t.HostBytes()
	}
	return kernels.NewTensor(kernels.NewBuffer(d, addr, host, int(size), what), dt, n), nil
}

func (d *fakeDevice) Free(t kernels.Tensor) {
	if t.Nil() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	base, ok := d.mem[t.Buffer().Addr()]
	if !ok {
		panic("fake device: free of memory it does not hold (freed twice?)")
	}
	delete(d.mem, t.Buffer().Addr())
	d.live -= int64(base.Bytes())
}

// liveBytes is the bytes allocated and not freed.
func (d *fakeDevice) liveBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.live
}

// h is t's memory on the reference backend.
func (d *fakeDevice) h(t kernels.Tensor) kernels.Tensor {
	if t.Nil() {
		return t
	}
	if t.Owner() != any(d) {
		panic(fmt.Sprintf("fake device: %s is not its memory", t))
	}
	d.mu.Lock()
	base, ok := d.mem[t.Buffer().Addr()]
	d.mu.Unlock()
	if !ok {
		panic(fmt.Sprintf("fake device: %s was freed", t))
	}
	lo := t.Offset() / t.DType().Size()
	return base.Slice(lo, lo+t.Len())
}

func (d *fakeDevice) enqueue(f func()) {
	d.mu.Lock()
	d.queue = append(d.queue, f)
	d.mu.Unlock()
}

func (d *fakeDevice) Sync() {
	d.mu.Lock()
	q := d.queue
	d.queue = nil
	d.mu.Unlock()
	for _, f := range q {
		f()
	}
}

func (d *fakeDevice) Upload(dst kernels.Tensor, src []byte) {
	h := d.h(dst)
	if len(src) != h.Bytes() {
		panic("fake device: upload size")
	}
	c := append([]byte(nil), src...)
	d.enqueue(func() { copy(h.HostBytes(), c) })
}

func (d *fakeDevice) Download(dst []byte, src kernels.Tensor) {
	h := d.h(src)
	d.Sync()
	d.ref.Download(dst, h)
}

func (d *fakeDevice) EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T, C int) {
	a, b, c, e := d.h(out), d.h(inp), d.h(wte), d.h(wpe)
	d.enqueue(func() { d.ref.EncoderForward(a, b, c, e, B, T, C) })
}

func (d *fakeDevice) EncoderBackward(dwte, dwpe, dout, inp kernels.Tensor, B, T, C int) {
	a, b, c, e := d.h(dwte), d.h(dwpe), d.h(dout), d.h(inp)
	d.enqueue(func() { d.ref.EncoderBackward(a, b, c, e, B, T, C) })
}

func (d *fakeDevice) LayerNormForward(out, mean, rstd, inp, weight, bias kernels.Tensor, N, C int) {
	a, b, c, e, f, g := d.h(out), d.h(mean), d.h(rstd), d.h(inp), d.h(weight), d.h(bias)
	d.enqueue(func() { d.ref.LayerNormForward(a, b, c, e, f, g, N, C) })
}

func (d *fakeDevice) ResidualLayerNormForward(res, out, mean, rstd, x, y, weight, bias kernels.Tensor, N, C int) {
	a, b, c, e, f, g, w, bs := d.h(res), d.h(out), d.h(mean), d.h(rstd), d.h(x), d.h(y), d.h(weight), d.h(bias)
	d.enqueue(func() { d.ref.ResidualLayerNormForward(a, b, c, e, f, g, w, bs, N, C) })
}

func (d *fakeDevice) LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd kernels.Tensor, N, C int) {
	a, b, c, e, f, g, w, m, r := d.h(dinp), d.h(dweight), d.h(dbias), d.h(dres), d.h(dout), d.h(inp), d.h(weight), d.h(mean), d.h(rstd)
	d.enqueue(func() { d.ref.LayerNormBackward(a, b, c, e, f, g, w, m, r, N, C) })
}

func (d *fakeDevice) MatmulForward(out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	a, b, c, e := d.h(out), d.h(inp), d.h(weight), d.h(bias)
	d.enqueue(func() { d.ref.MatmulForward(a, b, c, e, N, C, OC) })
}

func (d *fakeDevice) MatmulGeluForward(out, pre, inp, weight, bias kernels.Tensor, N, C, OC int) {
	a, b, c, e, f := d.h(out), d.h(pre), d.h(inp), d.h(weight), d.h(bias)
	d.enqueue(func() { d.ref.MatmulGeluForward(a, b, c, e, f, N, C, OC) })
}

func (d *fakeDevice) MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre kernels.Tensor, N, C, OC int) {
	a, b, c, e, f, g, p := d.h(dinp), d.h(dweight), d.h(dbias), d.h(dout), d.h(inp), d.h(weight), d.h(geluPre)
	d.enqueue(func() { d.ref.MatmulBackward(a, b, c, e, f, g, p, N, C, OC) })
}

func (d *fakeDevice) AttentionForward(out, lse, qkv kernels.Tensor, B, T, C, NH int) {
	a, b, c := d.h(out), d.h(lse), d.h(qkv)
	d.enqueue(func() { d.ref.AttentionForward(a, b, c, B, T, C, NH) })
}

func (d *fakeDevice) AttentionBackward(dqkv, dout, qkv, out, lse kernels.Tensor, B, T, C, NH int) {
	a, b, c, e, f := d.h(dqkv), d.h(dout), d.h(qkv), d.h(out), d.h(lse)
	d.enqueue(func() { d.ref.AttentionBackward(a, b, c, e, f, B, T, C, NH) })
}

func (d *fakeDevice) Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets kernels.Tensor, dloss float32, N, C, V, Vp int) {
	a, b, c, e, f, g, w, t := d.h(losses), d.h(lossSum), d.h(dinp), d.h(dweight), d.h(logits), d.h(inp), d.h(weight), d.h(targets)
	d.enqueue(func() { d.ref.Classifier(a, b, c, e, f, g, w, t, dloss, N, C, V, Vp) })
}

func (d *fakeDevice) DropoutForward(out, inp kernels.Tensor, p float32, seed uint64) {
	a, b := d.h(out), d.h(inp)
	d.enqueue(func() { d.ref.DropoutForward(a, b, p, seed) })
}

func (d *fakeDevice) DropoutBackward(dinp, dout kernels.Tensor, p float32, seed uint64) {
	a, b := d.h(dinp), d.h(dout)
	d.enqueue(func() { d.ref.DropoutBackward(a, b, p, seed) })
}

func (d *fakeDevice) AdamW(params, grads, m, v, cp, gradNorm kernels.Tensor, o kernels.AdamW) {
	a, b, c, e, f, g := d.h(params), d.h(grads), d.h(m), d.h(v), d.h(cp), d.h(gradNorm)
	d.enqueue(func() { d.ref.AdamW(a, b, c, e, f, g, o) })
}

func (d *fakeDevice) SumSquares(out, x kernels.Tensor, block int) {
	a, b := d.h(out), d.h(x)
	d.enqueue(func() { d.ref.SumSquares(a, b, block) })
}

func (d *fakeDevice) Convert(dst, src kernels.Tensor) {
	a, b := d.h(dst), d.h(src)
	d.enqueue(func() { d.ref.Convert(a, b) })
}

func (d *fakeDevice) Zero(x kernels.Tensor) {
	a := d.h(x)
	d.enqueue(func() { d.ref.Zero(a) })
}
