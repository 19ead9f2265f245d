package cuda

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWatch records what the NCCL watchdog tells a CollectiveWatch.
type fakeWatch struct {
	mu       sync.Mutex
	seq      int64
	started  map[int64]bool
	timedOut []int64
	verdict  error
}

func (w *fakeWatch) BeginCollective() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return w.seq
}

func (w *fakeWatch) CollectiveStarted(seq int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started == nil {
		w.started = map[int64]bool{}
	}
	w.started[seq] = true
}

func (w *fakeWatch) CollectiveTimedOut(seq int64, op string, after time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timedOut = append(w.timedOut, seq)
	return w.verdict
}

// simRanks opens world simulated GPUs and joins them in one communicator with
// the given options (each rank its own watch), on goroutines.
func simRanks(t *testing.T, world int, o NCCLOptions) ([]*Backend, []*NCCL, []*fakeWatch) {
	t.Helper()
	bs := make([]*Backend, world)
	for r := range bs {
		bs[r] = openSim(t, FP32, SimOptions{Seed: uint64(r)})
	}
	id, err := bs[0].NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]*NCCL, world)
	ws := make([]*fakeWatch, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		ws[r] = &fakeWatch{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ro := o
			ro.Watch = ws[r]
			cs[r], errs[r] = NewNCCL(bs[r], id, r, world, ro)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return bs, cs, ws
}

// recoverSim lets a simulated GPU whose context a test broke on purpose be closed.
func recoverSim(b *Backend) {
	b.sim.releaseHangs()
	b.sim.streamSynchronize(b.stream)
	b.sim.mu.Lock()
	b.sim.sticky = nil
	b.sim.mu.Unlock()
}

// A rank whose GPU hangs before a collective: both ranks' collectives end at
// the deadline, each saying whether its GPU had reached it; the watch of the
// hung rank never heard it start, the other's did, and both reported the
// timeout. Afterwards the aborted communicators refuse at once.
func TestNCCLWatchdogDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	bs, cs, ws := simRanks(t, 2, NCCLOptions{Timeout: deadline})
	// one healthy collective first
	bufs := [][]float32{make([]float32, 8), make([]float32, 8)} // host slices, staged through device scratch
	run := func(r int) error { return cs[r].AllReduceSum(context.Background(), bufs[r]) }
	if err := eachRank(2, run); err != nil {
		t.Fatal(err)
	}
	if err := bs[1].InjectSimFault(SimHang); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = run(r) }()
	}
	wg.Wait()
	took := time.Since(start)
	if took > 10*deadline {
		t.Errorf("the collectives took %s to end, the deadline is %s", took, deadline)
	}
	for r, want := range []string{"though this rank's GPU is in it", "this rank's GPU never reached it"} {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "rank "+string(rune('0'+r))+": nccl all-reduce (collective #2) did not finish within 300ms") ||
			!strings.Contains(errs[r].Error(), want) {
			t.Errorf("rank %d: %v, want the deadline and %q", r, errs[r], want)
		}
		if got := ws[r].timedOut; len(got) != 1 || got[0] != 2 {
			t.Errorf("rank %d reported timeouts %v, want [2]", r, got)
		}
	}
	if !ws[0].started[2] || ws[1].started[2] {
		t.Errorf("started: rank 0 %v, rank 1 %v; want true, false", ws[0].started, ws[1].started)
	}
	for r := range 2 {
		if err := run(r); err == nil || !strings.Contains(err.Error(), "did not finish") {
			t.Errorf("rank %d: a collective after the abort: %v", r, err)
		}
	}
	for _, b := range bs {
		recoverSim(b)
	}
}

// A collective that completes as its deadline passes is not reported timed
// out: the watchdog checked whether it had ended, then the deadline, and one
// that ended between the two was reported (to the watch, which fails the group
// naming ranks that had finished it) and its communicator aborted. The test's
// clock runs the stream to the collective's end each time it is read after
// the deadline was set, and says the deadline has passed.
func TestNCCLWatchdogCompletionAtTheDeadline(t *testing.T) {
	bs, cs, ws := simRanks(t, 1, NCCLOptions{Timeout: time.Minute})
	b, c := bs[0], cs[0]
	var reads int
	watchNow = func() time.Time {
		reads++
		if reads == 1 { // the deadline is set
			return time.Now()
		}
		if err := b.sim.streamSynchronize(b.stream); err != nil { // the collective ends ...
			t.Errorf("the stream: %v", err)
		}
		return time.Now().Add(2 * time.Minute) // ... as its deadline passes
	}
	t.Cleanup(func() { watchNow = time.Now })
	if err := c.AllReduceSum(context.Background(), make([]float32, 8)); err != nil {
		t.Errorf("the collective: %v, want success", err)
	}
	if reads < 2 {
		t.Fatalf("the watchdog read its clock %d times: the test did not reach the deadline", reads)
	}
	if got := ws[0].timedOut; len(got) != 0 {
		t.Errorf("reported timeouts %v of a collective that completed", got)
	}
	if err := c.Err(); err != nil {
		t.Errorf("the communicator: %v, want it alive", err)
	}
}

// The verdict of the watch (the store naming the rank at fault) is the error.
func TestNCCLWatchdogVerdict(t *testing.T) {
	_, cs, ws := simRanks(t, 2, NCCLOptions{Timeout: 200 * time.Millisecond})
	ws[0].verdict = errors.New("dist: rank 1 did not arrive at collective #1")
	err := cs[0].Broadcast(context.Background(), make([]float32, 4), 0) // rank 1 never calls
	if err == nil || err.Error() != "dist: rank 1 did not arrive at collective #1" {
		t.Errorf("got %v", err)
	}
	if cs[0].Err() == nil {
		t.Error("the communicator is not aborted")
	}
	cs[1].Abort(nil)
}

// An error NCCL meets in the background (ncclCommGetAsyncError) ends the
// collective at once, long before the deadline, and aborts the communicator;
// the other rank, stuck, is freed by Abort from outside (the job failing).
func TestNCCLAsyncError(t *testing.T) {
	bs, cs, _ := simRanks(t, 2, NCCLOptions{Timeout: time.Minute})
	if err := bs[1].InjectSimFault(SimNCCLError); err != nil {
		t.Fatal(err)
	}
	bufs := [][]float32{make([]float32, 8), make([]float32, 8)}
	done0 := make(chan error, 1)
	go func() { done0 <- cs[0].AllReduceSum(context.Background(), bufs[0]) }()
	start := time.Now()
	err := cs[1].AllReduceSum(context.Background(), bufs[1])
	if err == nil || !strings.Contains(err.Error(), "rank 1: nccl all-reduce (collective #1)") || !strings.Contains(err.Error(), "ncclSystemError") {
		t.Errorf("rank 1: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the asynchronous error took %s", time.Since(start))
	}
	gone := errors.New("dist: rank 1 failed")
	cs[0].Abort(gone)
	select {
	case err := <-done0:
		if !errors.Is(err, gone) {
			t.Errorf("rank 0: %v, want %v", err, gone)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0 still waits after Abort")
	}
	if err := cs[0].Barrier(context.Background()); !errors.Is(err, gone) {
		t.Errorf("a barrier after Abort: %v", err)
	}
	for _, c := range cs {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

// The simulated stream runs in the background while the host polls an event.
func TestSimEventQuery(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	d := b.sim
	release := make(chan struct{})
	if err := d.enqueue("slow", b.stream, func() error { <-release; return nil }); err != nil {
		t.Fatal(err)
	}
	e, _ := d.eventCreate()
	d.eventRecord(e, b.stream)
	if ok, err := d.eventQuery(e); ok || err != nil {
		t.Fatalf("query before the work ran: %v %v", ok, err)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := d.eventQuery(e)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream did not run in the background")
		}
		time.Sleep(time.Millisecond)
	}
	d.eventDestroy(e)
}

func eachRank(world int, f func(r int) error) error {
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TestNCCLVersion: ncclGetVersion's two encodings spelled, and an NCCL without
// bfloat16 refused at load rather than at the first bfloat16 collective.
func TestNCCLVersion(t *testing.T) {
	for _, c := range []struct {
		code int32
		want string
		ok   bool
	}{{22105, "2.21.5", true}, {21000, "2.10.0", true}, {2708, "2.7.8", false}, {20903, "2.9.3", false}} {
		v, err := ncclVersion(c.code)
		if v != c.want || (err == nil) != c.ok {
			t.Errorf("ncclVersion(%d) = %q, %v; want %q, ok %v", c.code, v, err, c.want, c.ok)
		}
	}
}
