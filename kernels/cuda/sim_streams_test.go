package cuda

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/kernels"
)

// TestSimStreamHazards: two streams touching the same device memory with
// nothing ordering them is an error naming both ops; an event wait, or the
// host having waited, orders them; disjoint ranges and two reads never
// conflict.
func TestSimStreamHazards(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	d := b.sim
	_, x := managed(t, b, 64)
	_, y := managed(t, b, 64)
	s2, err := d.streamCreate()
	if err != nil {
		t.Fatal(err)
	}
	half := func(t kernels.Tensor, i int) devicePtr { return t.Addr() + devicePtr(128*i) }
	// A kernel writes x on the compute stream; s2 copies x to y unordered.
	b.Convert(x, x)
	err = d.memcpyDtoD(y.Addr(), x.Addr(), 256, s2)
	if err == nil || !strings.Contains(err.Error(), "stream hazard: cuMemcpyDtoDAsync on stream") ||
		!strings.Contains(err.Error(), "reads device memory") || !strings.Contains(err.Error(), "that kernel convert_f32_f32 on the compute stream writes") {
		t.Fatalf("unordered copy after a kernel: %v", err)
	}
	// Ordered by an event: fine; and a later compute op that writes what s2
	// reads, unordered again, is caught the other way round.
	e, _ := d.eventCreate()
	if err := d.eventRecord(e, b.stream); err != nil {
		t.Fatal(err)
	}
	if err := d.streamWaitEvent(s2, e); err != nil {
		t.Fatal(err)
	}
	if err := d.memcpyDtoD(half(y, 0), half(x, 0), 128, s2); err != nil {
		t.Fatalf("ordered by an event: %v", err)
	}
	if err := d.memsetD8(half(x, 1), 0, 128, b.stream); err != nil { // disjoint from s2's copy
		t.Fatalf("disjoint ranges: %v", err)
	}
	if err := d.memcpyDtoD(half(x, 1), half(y, 1), 128, b.stream); err != nil { // reads y's other half: s2 wrote y's first
		t.Fatalf("disjoint ranges: %v", err)
	}
	err = d.memsetD8(half(y, 0), 0, 16, b.stream)
	if err == nil || !strings.Contains(err.Error(), "cuMemsetD8Async on the compute stream writes") || !strings.Contains(err.Error(), "that cuMemcpyDtoDAsync on stream") {
		t.Fatalf("unordered write after the other stream's copy: %v", err)
	}
	// Two reads: fine.
	if err := d.memcpyDtoD(half(x, 0), half(y, 1), 64, s2); err != nil {
		t.Fatal(err)
	}
	// The host waited for s2: everything queued later comes after it.
	if err := d.streamSynchronize(s2); err != nil {
		t.Fatal(err)
	}
	if err := d.memsetD8(half(y, 0), 0, 16, b.stream); err != nil {
		t.Fatalf("after the host waited: %v", err)
	}
	b.Sync()
}

// TestSimHazardCheckOff: NoHazardCheck lets the unordered copy through.
func TestSimHazardCheckOff(t *testing.T) {
	b := openSim(t, FP32, SimOptions{NoHazardCheck: true})
	_, x := managed(t, b, 64)
	_, y := managed(t, b, 64)
	s2, _ := b.sim.streamCreate()
	b.Convert(x, x)
	if err := b.sim.memcpyDtoD(y.Addr(), x.Addr(), 256, s2); err != nil {
		t.Fatal(err)
	}
	b.Sync()
}

// TestNCCLCommStream: collectives started on the communication stream run
// after the compute stream's work queued before them, while the compute
// stream goes on (the trace shows later compute work queued before
// FinishCollectives), and their results equal the synchronous collectives'.
// Under PlantMissingWait the hazard check refuses the collective, naming the
// kernel that wrote its buffer.
func TestNCCLCommStream(t *testing.T) {
	const world, n = 2, 256
	var traces [world]bytes.Buffer
	bs := make([]*Backend, world)
	for r := range bs {
		bs[r] = openSim(t, FP32, SimOptions{Seed: uint64(r), Trace: &traces[r]})
	}
	id, err := bs[0].NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]float32, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				b := bs[r]
				c, err := NewNCCL(b, id, r, world, NCCLOptions{Timeout: time.Minute})
				if err != nil {
					return err
				}
				defer c.Close()
				g, err := b.Alloc("grads", kernels.Float32, n)
				if err != nil {
					return err
				}
				other, err := b.Alloc("other", kernels.Float32, n)
				if err != nil {
					return err
				}
				host := make([]float32, n)
				for i := range host {
					host[i] = float32(r*1000 + i)
				}
				b.Upload(g, kernels.Float32Bytes(host))
				ctx := context.Background()
				b.Convert(g.Slice(n/2, n), g.Slice(n/2, n)) // the "backward" finishes the second half first
				if err := c.StartAllReduceSumTensor(ctx, g.Slice(n/2, n)); err != nil {
					return err
				}
				b.Convert(g.Slice(0, n/2), g.Slice(0, n/2))
				if err := c.StartAllReduceSumTensor(ctx, g.Slice(0, n/2)); err != nil {
					return err
				}
				b.Zero(other) // compute goes on
				if err := c.FinishCollectives(ctx); err != nil {
					return err
				}
				got[r] = make([]float32, n)
				b.Download(kernels.Float32Bytes(got[r]), g)
				// A reduce to rank 1: its copy becomes the sum, rank 0's stays.
				b.Upload(other, kernels.Float32Bytes(host))
				if err := c.StartReduceSumTensor(ctx, other, 1); err != nil {
					return err
				}
				if err := c.FinishCollectives(ctx); err != nil {
					return err
				}
				red := make([]float32, n)
				b.Download(kernels.Float32Bytes(red), other)
				for i := range red {
					if want := map[int]float32{0: host[i], 1: float32(1000 + 2*i)}[r]; red[i] != want {
						return fmt.Errorf("reduce to rank 1: element %d = %v, want %v", i, red[i], want)
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for i := range n {
		if want := float32(1000 + 2*i); got[0][i] != want || got[1][i] != want {
			t.Fatalf("element %d: %v and %v, want %v", i, got[0][i], got[1][i], want)
		}
	}
	// The trace: both all-reduces queued on the comm stream before the
	// compute stream's memset, each behind a wait for the compute stream.
	tr := traces[0].String()
	first, last := strings.Index(tr, "comm 2 ncclAllReduce r=512 w=512"), strings.Index(tr, "comm 4 ncclAllReduce")
	memset := strings.Index(tr, "compute 6 cuMemsetD8Async") // the memset after the second start
	if first < 0 || memset < 0 || last > memset || !strings.Contains(tr, "comm 1 cuStreamWaitEvent r=0 w=0") {
		t.Fatalf("trace: want the all-reduces (behind waits) on the comm stream before the compute stream's memset:\n%s", tr)
	}

	// The planted missing wait: one rank, so that nothing waits for a peer.
	b := openSim(t, FP32, SimOptions{})
	id1, _ := b.NewUniqueID()
	c, err := NewNCCL(b, id1, 0, 1, NCCLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.PlantMissingWait()
	g, _ := b.Alloc("grads", kernels.Float32, n)
	b.Convert(g, g)
	err = c.StartAllReduceSumTensor(context.Background(), g)
	if err == nil || !strings.Contains(err.Error(), "stream hazard: ncclAllReduce on the comm stream") || !strings.Contains(err.Error(), "kernel convert_f32_f32 on the compute stream writes") {
		t.Fatalf("missing wait: %v", err)
	}
}
