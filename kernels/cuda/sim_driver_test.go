package cuda

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"gptkit/kernels"
	"gptkit/kernels/cuda/sim"
)

// The simulated streams run when something waits for them: the host sees a
// kernel's result only after Sync, as on a GPU (where reading earlier races).
func TestSimStreamsRunAtSync(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	x, xt := managed(t, b, 1000)
	y, yt := managed(t, b, 1000)
	for i := range x {
		x[i] = 2
	}
	b.Convert(yt, xt)
	if y[0] != 0 {
		t.Fatalf("the kernel ran before anything waited for it: %v", y[0])
	}
	b.Sync()
	if y[0] != 2 || y[999] != 2 {
		t.Fatalf("after Sync: %v %v, want 2", y[0], y[999])
	}
}

// Copies from pageable host memory are staged at the call; events order two
// streams.
func TestSimCopiesAndEvents(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	d := b.sim
	host := []float32{1, 2, 3, 4}
	dst, dstT := managed(t, b, 4)
	src := hostBuf(t, b, 4)
	s2, err := d.streamCreate()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.memcpyHtoD(dp(src), unsafe.Pointer(&host[0]), 16, b.stream); err != nil {
		t.Fatal(err)
	}
	host[0] = 99 // after the call: the staged copy keeps 1
	e, _ := d.eventCreate()
	if err := d.eventRecord(e, b.stream); err != nil {
		t.Fatal(err)
	}
	// s2 copies src to dst only after the event: it must see the copied values
	if err := d.streamWaitEvent(s2, e); err != nil {
		t.Fatal(err)
	}
	if err := d.memcpyDtoD(dp(dst), dp(src), 16, s2); err != nil {
		t.Fatal(err)
	}
	if err := d.streamSynchronize(s2); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 1 || dst[3] != 4 {
		t.Fatalf("dst %v, want [1 2 3 4]", dst)
	}
	// to pageable memory the copy waits for the stream
	c1, c1T := managed(t, b, 4)
	b.Convert(c1T, dstT)
	out := make([]float32, 4)
	if err := d.memcpyDtoH(unsafe.Pointer(&out[0]), dp(c1), 16, b.stream); err != nil {
		t.Fatal(err)
	}
	if out[3] != 4 {
		t.Fatalf("DtoH to pageable memory returned before the stream ran: %v", out)
	}
	// pinned memory: asynchronous
	p, _ := d.memAllocHost(16)
	pinned := unsafe.Slice((*float32)(p), 4)
	c2, c2T := managed(t, b, 4)
	b.Convert(c2T, dstT)
	if err := d.memcpyDtoH(p, dp(c2), 16, b.stream); err != nil {
		t.Fatal(err)
	}
	if pinned[3] != 0 {
		t.Fatalf("a copy to pinned memory ran before the stream was synchronized")
	}
	ev, _ := d.eventCreate()
	d.eventRecord(ev, b.stream)
	if err := d.eventSynchronize(ev); err != nil {
		t.Fatal(err)
	}
	if pinned[3] != 4 {
		t.Fatalf("after the event: %v", pinned)
	}
	d.memFreeHost(p)
	d.streamDestroy(s2)
}

// A kernel fault surfaces at the next synchronization as an error naming the
// kernel, and sticks.
func TestSimFaultIsSticky(t *testing.T) {
	b, err := Open(Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x := hostBuf(t, b, 10)
	// convert_f32_f32 over 2000 elements of 10-element buffers
	f := b.fns["convert_f32_f32"]
	if err := b.drv.launchKernel(f, dim3{8, 1, 1}, dim3{256, 1, 1}, 0, b.stream, []uint64{uint64(dp(x)), uint64(dp(x)), 2000}); err != nil {
		t.Fatal(err)
	}
	err = b.drv.streamSynchronize(b.stream)
	var fault *sim.Fault
	if !errors.As(err, &fault) || !errors.Is(err, Result(700)) {
		t.Fatalf("%v: want an illegal-address fault", err)
	}
	if !strings.Contains(err.Error(), "kernel convert_f32_f32") || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v", err)
	}
	if err2 := b.drv.memsetD8(dp(x), 0, 4, b.stream); err2 == nil {
		t.Errorf("a call after the fault succeeded")
	}
	// and the backend's ops panic with it, one line
	msg := panicOf(func() { b.Sync() })
	if !strings.Contains(msg, "kernel convert_f32_f32") {
		t.Errorf("Sync after the fault: %q", msg)
	}
}

// Out of simulated memory: Alloc's one-line error names what was asked for,
// the bytes and what is free.
func TestSimOutOfMemory(t *testing.T) {
	b := openSim(t, FP32, SimOptions{Memory: 256 << 20})
	_, err := b.Alloc("activations", kernels.Float32, 100<<20) // 400 MB
	var oom *kernels.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("%v, want *kernels.OutOfMemoryError", err)
	}
	msg := oom.Error()
	if !strings.Contains(msg, "out of memory on "+simName+" allocating activations: 400.0 MiB asked") || strings.Contains(msg, "\n") {
		t.Errorf("%q", msg)
	}
	if oom.Free <= 0 || oom.Free > 256<<20 || oom.Total != 256<<20 {
		t.Errorf("free %d of %d", oom.Free, oom.Total)
	}
}

// In-process NCCL: each rank its own simulated GPU on its own goroutine.
func TestSimNCCLInProcess(t *testing.T) {
	for _, world := range []int{2, 4} {
		bs := make([]*Backend, world)
		for r := range bs {
			bs[r] = openSim(t, FP32, SimOptions{Seed: uint64(r)})
		}
		id, err := bs[0].NewUniqueID()
		if err != nil {
			t.Fatal(err)
		}
		results := make([][]float32, world)
		var wg sync.WaitGroup
		errs := make([]error, world)
		for r := 0; r < world; r++ {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				errs[r] = ncclScript(bs[r], id, r, world, &results[r])
			}(r)
		}
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("world %d rank %d: %v", world, r, err)
			}
		}
		for r := 1; r < world; r++ {
			for i := range results[0] {
				if results[r][i] != results[0][i] {
					t.Fatalf("world %d: rank %d differs from rank 0 at %d: %v vs %v", world, r, i, results[r][i], results[0][i])
				}
			}
		}
		W := float32(world)
		want := []float32{W * (W - 1) / 2, (W - 1) / 2, 7}
		for i, w := range want {
			if results[0][i] != w {
				t.Errorf("world %d: result %d = %v, want %v", world, i, results[0][i], w)
			}
		}
	}
}

// ncclScript runs the collectives on one rank; out collects results to compare.
func ncclScript(b *Backend, id UniqueID, rank, world int, out *[]float32) error {
	c, err := NewNCCL(b, id, rank, world, NCCLOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	buf := make([]float32, 3*world)
	for i := range buf {
		buf[i] = float32(rank)
	}
	if err := c.AllReduceSum(ctx, buf[:1]); err != nil {
		return err
	}
	if err := c.AllReduceAvg(ctx, buf[1:2]); err != nil {
		return err
	}
	buf[2] = float32(rank * 7)
	if err := c.Broadcast(ctx, buf[2:3], 1); err != nil {
		return err
	}
	// reduce-scatter then all-gather of world parts: every element ends as Σ ranks
	rs := make([]float32, 2*world)
	for i := range rs {
		rs[i] = float32(rank + i)
	}
	if err := c.ReduceScatterSum(ctx, rs); err != nil {
		return err
	}
	if err := c.AllGather(ctx, rs); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	// the same on device tensors, in place (no staging through the host)
	dt, err := b.Alloc("collective test", kernels.Float32, 2*world)
	if err != nil {
		return err
	}
	defer b.Free(dt)
	b.Upload(dt, kernels.Float32Bytes(rs[:2*world]))
	if err := c.AllReduceSumTensor(ctx, dt); err != nil {
		return err
	}
	got := make([]float32, 2*world)
	b.Download(kernels.Float32Bytes(got), dt)
	for i, v := range got {
		if v != float32(world)*rs[i] {
			return errors.New("AllReduceSumTensor: wrong sum")
		}
	}
	*out = append(append([]float32{}, buf[:3]...), rs...)
	for i, v := range rs {
		want := float32(world*(world-1)/2 + world*i)
		if v != want {
			return errors.New("reduce-scatter + all-gather: wrong sum")
		}
	}
	return nil
}

// Ranks that call different collectives get an error, not a hang.
func TestSimNCCLMismatch(t *testing.T) {
	bs := []*Backend{openSim(t, FP32, SimOptions{}), openSim(t, FP32, SimOptions{})}
	id, _ := bs[0].NewUniqueID()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			c, err := NewNCCL(bs[r], id, r, 2, NCCLOptions{})
			if err != nil {
				errs[r] = err
				return
			}
			buf := make([]float32, 4)
			if r == 0 {
				errs[r] = c.AllReduceSum(context.Background(), buf)
			} else {
				errs[r] = c.Broadcast(context.Background(), buf, 0)
			}
		}(r)
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "do not match") {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	// the contexts are lost now: close without checking
	for _, b := range bs {
		b.sim.sticky = nil
	}
}

// fakeTransport joins in-process ranks as a Transport would join processes.
type fakeTransport struct {
	rank, world int
	hub         *fakeHub
}

type fakeHub struct {
	mu    sync.Mutex
	cond  *sync.Cond
	bufs  [][]float32
	n     int
	round int
}

func (f *fakeTransport) Rank() int  { return f.rank }
func (f *fakeTransport) World() int { return f.world }

func (f *fakeTransport) exchange(buf []float32, combine func(all [][]float32)) {
	h := f.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	round := h.round
	h.bufs[f.rank] = buf
	h.n++
	if h.n == f.world {
		combine(h.bufs)
		h.n = 0
		h.round++
		h.cond.Broadcast()
	}
	for h.round == round {
		h.cond.Wait()
	}
}

func (f *fakeTransport) AllReduceSum(ctx context.Context, buf []float32) error {
	f.exchange(buf, func(all [][]float32) {
		for i := range buf {
			var s float32
			for _, b := range all {
				s += b[i]
			}
			for _, b := range all {
				b[i] = s
			}
		}
	})
	return nil
}

func (f *fakeTransport) Broadcast(ctx context.Context, buf []float32, root int) error {
	f.exchange(buf, func(all [][]float32) {
		for _, b := range all {
			copy(b, all[root])
		}
	})
	return nil
}

// The simulated NCCL over a transport (how ranks in different processes
// reduce): the same results as in one process.
func TestSimNCCLTransport(t *testing.T) {
	world := 3
	hub := &fakeHub{bufs: make([][]float32, world)}
	hub.cond = sync.NewCond(&hub.mu)
	bs := make([]*Backend, world)
	for r := range bs {
		bs[r] = openSim(t, FP32, SimOptions{})
	}
	id, _ := bs[0].NewUniqueID()
	results := make([][]float32, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := 0; r < world; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			tr := &fakeTransport{rank: r, world: world, hub: hub}
			c, err := NewNCCL(bs[r], id, r, world, NCCLOptions{Transport: tr})
			if err != nil {
				errs[r] = err
				return
			}
			ctx := context.Background()
			buf := make([]float32, 2*world)
			for i := range buf {
				buf[i] = float32(r + i)
			}
			if errs[r] = c.ReduceScatterSum(ctx, buf); errs[r] != nil {
				return
			}
			if errs[r] = c.AllGather(ctx, buf); errs[r] != nil {
				return
			}
			results[r] = append([]float32(nil), buf...)
		}(r)
	}
	wg.Wait()
	for r := range results {
		if errs[r] != nil {
			t.Fatal(errs[r])
		}
		for i, v := range results[r] {
			if want := float32(world*(world-1)/2 + world*i); v != want {
				t.Fatalf("rank %d element %d: %v, want %v", r, i, v, want)
			}
		}
	}
}

// The simulated driver is CUDA 11.8 on sm_80: a newer PTX ISA or a higher
// target is refused as the real driver refuses it.
func TestSimDriverRefusesNewerPTX(t *testing.T) {
	d := newSimDriver(SimOptions{})
	ok := ".version 7.8\n.target sm_80\n.address_size 64\n"
	if _, err := d.moduleLoad("ok.ptx", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]int32{
		".version 8.0\n.target sm_80\n.address_size 64\n":  errUnsupportedPTXVers,
		".version 7.8\n.target sm_90a\n.address_size 64\n": errNoBinaryForGPU,
		".version 7.8\n.target sm_86\n.address_size 64\n":  errNoBinaryForGPU,
	} {
		_, err := d.moduleLoad("new.ptx", []byte(src))
		if !errors.Is(err, Result(want)) {
			t.Errorf("%q: %v, want %v", src, err, Result(want))
		}
	}
	if _, err := d.moduleLoad("old.ptx", []byte(".version 7.0\n.target sm_75\n.address_size 64\n")); err != nil {
		t.Errorf("sm_75 code on sm_80: %v", err)
	}
}
