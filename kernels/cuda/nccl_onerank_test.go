package cuda

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/kernels"
)

// A communicator of one rank goes through every NCCL call the trainer makes:
// the unique id (128 bytes passed by value), ncclCommInitRank, each collective
// on the backend's stream and on the communication stream with its events, the
// watchdog's polls, ncclCommAbort. On one GPU this is the real NCCL's only
// check (the GPU check's machine has one GPU; dp2 needs two): a wrong binding
// shows as a failed call, a crash or a changed value (every collective of one
// rank leaves its buffer as it was).

func TestNCCLOneRankSim(t *testing.T) {
	ncclOneRank(t, openSim(t, FP32, SimOptions{}))
}

func TestNCCLOneRankGPU(t *testing.T) {
	ncclOneRank(t, openOrSkip(t, BF16))
}

func ncclOneRank(t *testing.T, b *Backend) {
	ctx := context.Background()
	id, err := b.NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewNCCL(b, id, 0, 1, NCCLOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(i%97) - 48.5 // exact in bfloat16 and float16
	}
	for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16, kernels.Float16} {
		x, err := b.Alloc("nccl test", dt, n)
		if err != nil {
			t.Fatal(err)
		}
		kernels.UploadFloat32(b, x, want)
		for _, step := range []struct {
			name string
			run  func() error
		}{
			{"AllReduceSumTensor", func() error { return c.AllReduceSumTensor(ctx, x) }},
			{"BroadcastTensor", func() error { return c.BroadcastTensor(ctx, x, 0) }},
			{"ReduceScatterSumTensor", func() error { return c.ReduceScatterSumTensor(ctx, x) }},
			{"AllGatherTensor", func() error { return c.AllGatherTensor(ctx, x) }},
			{"StartAllReduceSumTensor", func() error {
				return errors.Join(c.StartAllReduceSumTensor(ctx, x.Slice(0, n/2)), c.StartAllReduceSumTensor(ctx, x.Slice(n/2, n)), c.FinishCollectives(ctx))
			}},
			{"StartReduceSumTensor", func() error {
				return errors.Join(c.StartReduceSumTensor(ctx, x.Slice(0, 300), 0), c.StartReduceSumTensor(ctx, x.Slice(300, n), 0), c.FinishCollectives(ctx))
			}},
			{"StartReduceScatterSumTensor", func() error {
				return errors.Join(c.StartReduceScatterSumTensor(ctx, x), c.FinishCollectives(ctx))
			}},
		} {
			if err := step.run(); err != nil {
				t.Fatalf("%s of %s: %v", step.name, dt, err)
			}
			got := kernels.DownloadFloat32(b, x)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s of %s changed element %d: %g, want %g", step.name, dt, i, got[i], want[i])
				}
			}
		}
		b.Free(x)
	}
	host := append([]float32(nil), want...)
	for name, run := range map[string]func() error{
		"AllReduceSum": func() error { return c.AllReduceSum(ctx, host) },
		"AllReduceAvg": func() error { return c.AllReduceAvg(ctx, host) },
		"Broadcast":    func() error { return c.Broadcast(ctx, host, 0) },
		"AllGather":    func() error { return c.AllGather(ctx, host) },
		"Barrier":      func() error { return c.Barrier(ctx) },
	} {
		if err := run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range host {
			if host[i] != want[i] {
				t.Fatalf("%s changed element %d: %g, want %g", name, i, host[i], want[i])
			}
		}
	}
	gone := errors.New("the job failed elsewhere")
	c.Abort(gone)
	if err := c.AllReduceSum(ctx, host); !errors.Is(err, gone) {
		t.Errorf("a collective after Abort: %v, want %v", err, gone)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after Abort: %v", err)
	}
}

// tidLog records on which OS threads the backend's context was made current,
// and whether ncclCommAbort ran on one of them.
type tidLog struct {
	mu                    sync.Mutex
	current               map[int]bool
	aborts, abortsWithCtx int
	destroys              int
}

type ctxDriver struct {
	driverAPI
	l *tidLog
}

func (d ctxDriver) ctxSetCurrent(c cuContext) error {
	d.l.mu.Lock()
	d.l.current[syscall.Gettid()] = true
	d.l.mu.Unlock()
	return d.driverAPI.ctxSetCurrent(c)
}

type ctxNCCL struct {
	ncclAPI
	l             *tidLog
	failAllReduce error // what ncclAllReduce returns, when set
}

func (n ctxNCCL) allReduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, h uintptr, s stream) error {
	if n.failAllReduce != nil {
		return n.failAllReduce
	}
	return n.ncclAPI.allReduce(send, recv, count, dt, op, h, s)
}

func (n ctxNCCL) commDestroy(h uintptr) error {
	n.l.mu.Lock()
	n.l.destroys++
	n.l.mu.Unlock()
	return n.ncclAPI.commDestroy(h)
}

func (n ctxNCCL) commAbort(h uintptr) error {
	n.l.mu.Lock()
	n.l.aborts++
	if n.l.current[syscall.Gettid()] {
		n.l.abortsWithCtx++
	}
	n.l.mu.Unlock()
	return n.ncclAPI.commAbort(h)
}

// Abort from a goroutine of its own (the job failed elsewhere) calls
// ncclCommAbort on an OS thread where the backend's context is current: NCCL
// then tears down on the communicator's GPU, not the runtime's device 0.
func TestNCCLAbortContext(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	l := &tidLog{current: map[int]bool{}}
	b.drv = ctxDriver{b.drv, l}
	id, err := b.NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewNCCL(b, id, 0, 1, NCCLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.n = ctxNCCL{c.n, l, nil}
	l.mu.Lock()
	clear(l.current) // no thread has the context current yet, as in a fresh process
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { c.Abort(errors.New("the job failed elsewhere")); close(done) }()
	<-done
	if l.aborts != 1 || l.abortsWithCtx != 1 {
		t.Errorf("ncclCommAbort called %d times, %d of them with the context current on its thread; want 1 and 1", l.aborts, l.abortsWithCtx)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

// oneRankLogged is a communicator of one rank on cuda-sim whose NCCL calls are
// logged (and ncclAllReduce fails with failAllReduce, when set).
func oneRankLogged(t *testing.T, failAllReduce error) (*Backend, *NCCL, *tidLog) {
	b := openSim(t, FP32, SimOptions{})
	l := &tidLog{current: map[int]bool{}}
	id, err := b.NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewNCCL(b, id, 0, 1, NCCLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.n = ctxNCCL{c.n, l, failAllReduce}
	return b, c, l
}

// An NCCL call that fails when it is queued (on either stream) aborts the
// communicator: this rank's collectives no longer match the others', and
// ncclCommDestroy would wait for them.
func TestNCCLCallErrorAborts(t *testing.T) {
	for _, async := range []bool{false, true} {
		fail := errors.New("cuda: ncclAllReduce: ncclInvalidUsage")
		b, c, l := oneRankLogged(t, fail)
		x, err := b.Alloc("x", kernels.Float32, 8)
		if err != nil {
			t.Fatal(err)
		}
		if async {
			err = c.StartAllReduceSumTensor(context.Background(), x)
		} else {
			err = c.AllReduceSumTensor(context.Background(), x)
		}
		if !errors.Is(err, fail) {
			t.Fatalf("async %v: %v, want %v", async, err, fail)
		}
		if !errors.Is(c.Err(), fail) || l.aborts != 1 {
			t.Errorf("async %v: after the failed call Err() is %v and ncclCommAbort ran %d times; want the call's error and 1", async, c.Err(), l.aborts)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if l.destroys != 0 {
			t.Errorf("async %v: ncclCommDestroy after ncclCommAbort", async)
		}
		b.Free(x)
	}
}

// Close with collectives queued on the communication stream and never waited
// for (the step failed in between) aborts rather than destroys: ncclCommDestroy
// would flush them, waiting for peers that may never come.
func TestNCCLClosePendingAborts(t *testing.T) {
	b, c, l := oneRankLogged(t, nil)
	x, err := b.Alloc("x", kernels.Float32, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartAllReduceSumTensor(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if l.aborts != 1 || l.destroys != 0 {
		t.Errorf("Close with a collective queued: ncclCommAbort %d times, ncclCommDestroy %d times; want 1 and 0", l.aborts, l.destroys)
	}
	// (x stays allocated: its collective was aborted, not waited for, so
	// freeing it would race with it; the backend's Close frees it.)
}

// An Abort that finds the communicator busy (commMu held: a short NCCL call
// of another goroutine) leaves the abort to whoever comes next; Close is next
// here, and aborts rather than destroys (ncclCommDestroy of a communicator
// whose peers are gone can wait for them).
func TestNCCLAbortWhileBusyThenClose(t *testing.T) {
	_, c, l := oneRankLogged(t, nil)
	c.w.commMu.Lock()
	c.Abort(errors.New("the job failed elsewhere"))
	c.w.commMu.Unlock()
	if l.aborts != 0 {
		t.Fatalf("Abort with commMu held aborted %d times; the test needs it to lose the race", l.aborts)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if l.aborts != 1 || l.destroys != 0 {
		t.Errorf("Close after an Abort that lost the race: ncclCommAbort %d times, ncclCommDestroy %d times; want 1 and 0", l.aborts, l.destroys)
	}
}
