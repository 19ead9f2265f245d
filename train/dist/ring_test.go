package dist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const testToken = "test-token"

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startStore serves a store for world ranks on a loopback port.
func startStore(t testing.TB, world int, cfg ServerConfig) (*Server, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Token, cfg.World = testToken, world
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := NewServer(ln, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().(*net.TCPAddr).Port
}

// startGroup joins world ranks in goroutines over loopback.
func startGroup(t testing.TB, world int, o Options, cfg ServerConfig) []*Comm {
	t.Helper()
	comms, _ := startGroupStore(t, world, o, cfg)
	return comms
}

// startGroupStore is startGroup that also returns the store.
func startGroupStore(t testing.TB, world int, o Options, cfg ServerConfig) ([]*Comm, *Server) {
	t.Helper()
	s, port := startStore(t, world, cfg)
	if o.Token == "" {
		o.Token = testToken
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	comms := make([]*Comm, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Place{Rank: r, World: world, MasterAddr: "127.0.0.1", MasterPort: port, StoreHostedByLauncher: true}
			comms[r], errs[r] = Init(context.Background(), p, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close(nil)
		}
	})
	return comms, s
}

// each runs f on every rank at once and returns the errors.
func each(comms []*Comm, f func(r int, c *Comm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r, c)
		}()
	}
	wg.Wait()
	return errs
}

func mustEach(t *testing.T, comms []*Comm, f func(r int, c *Comm) error) {
	t.Helper()
	if err := errors.Join(each(comms, f)...); err != nil {
		t.Fatal(err)
	}
}

func randomBufs(world, n int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	bufs := make([][]float32, world)
	for r := range bufs {
		bufs[r] = make([]float32, n)
		for i := range bufs[r] {
			bufs[r][i] = float32(rng.NormFloat64())
		}
	}
	return bufs
}

// ringSum is the sum the ring computes for element i: segment s's partial sum
// starts on rank s+1 and goes around to rank s.
func ringSum(bufs [][]float32, i, parts int) float32 {
	W, n := len(bufs), len(bufs[0])
	s := 0
	for k := range parts {
		if lo, hi := segment(n, parts, k); i >= lo && i < hi {
			s = k
		}
	}
	acc := bufs[(s+1)%W][i]
	for j := 2; j <= W; j++ {
		acc = bufs[(s+j)%W][i] + acc
	}
	return acc
}

func clone(bufs [][]float32) [][]float32 {
	out := make([][]float32, len(bufs))
	for i, b := range bufs {
		out[i] = append([]float32(nil), b...)
	}
	return out
}

// transports are the ways ranks can be linked: TCP, Unix socket streams, the
// shared-memory rings of same-host ranks (the default), and those rings passing
// chunks by reference (direct: the buffers are the ranks' AllocShared memory).
var transports = []struct {
	name   string
	o      Options
	shared bool
}{{"tcp", Options{TCPOnly: true}, false}, {"unix", Options{NoSharedMemory: true}, false}, {"shm", Options{}, false}, {"direct", Options{}, true}}

// stager puts each rank's copy of the inputs where the collectives take it:
// fresh memory, or (shared) each rank's AllocShared arena, at an offset that
// differs between ranks.
type stager struct {
	arenas [][]float32
}

func newStager(t *testing.T, comms []*Comm, shared bool, maxN int) *stager {
	s := &stager{}
	if shared {
		for r, c := range comms {
			a := c.AllocShared(maxN + 3*r + 1)
			if ds, ok := c.out.(directSender); runtime.GOOS == "linux" && (!ok || func() bool { k, _ := ds.regionOf(a); return k == 0 }()) {
				t.Fatalf("rank %d: AllocShared gave no shared memory", r)
			}
			s.arenas = append(s.arenas, a)
		}
	}
	return s
}

func (s *stager) stage(in [][]float32) [][]float32 {
	if s.arenas == nil {
		return clone(in)
	}
	out := make([][]float32, len(in))
	for r, b := range in {
		out[r] = s.arenas[r][3*r+1 : 3*r+1+len(b)]
		copy(out[r], b)
	}
	return out
}

// TestCollectives: every collective on 2, 3 and 4 ranks, over every transport and
// lengths that leave segments empty, fit one chunk or span several, gives the
// ring's sums bit for bit on every rank.
func TestCollectives(t *testing.T) {
	for _, tr := range transports {
		for _, world := range []int{2, 3, 4} {
			t.Run(fmt.Sprint(tr.name, "-", world), func(t *testing.T) {
				o := tr.o
				o.ChunkBytes, o.Timeout = 64, 30*time.Second
				testCollectives(t, world, o, tr.shared)
			})
		}
	}
}

// TestLargeAllReduce: buffers several times the shared ring, of lengths that are
// no multiple of anything, with the default chunk, on every transport.
func TestLargeAllReduce(t *testing.T) {
	for _, tr := range transports {
		for _, world := range []int{2, 3} {
			t.Run(fmt.Sprint(tr.name, "-", world), func(t *testing.T) {
				o := tr.o
				o.Timeout = 30 * time.Second
				comms := startGroup(t, world, o, ServerConfig{})
				st := newStager(t, comms, tr.shared, 3<<20+7)
				for _, n := range []int{3<<20 + 7, 1<<20 + 1} {
					in := randomBufs(world, n, uint64(n))
					bufs := st.stage(in)
					mustEach(t, comms, func(r int, c *Comm) error { return c.AllReduceSum(context.Background(), bufs[r]) })
					for i := range n {
						want := ringSum(in, i, world)
						for r := range world {
							if math.Float32bits(bufs[r][i]) != math.Float32bits(want) {
								t.Fatalf("n %d: rank %d [%d] = %g, want %g", n, r, i, bufs[r][i], want)
							}
						}
					}
				}
			})
		}
	}
}

func testCollectives(t *testing.T, world int, o Options, shared bool) {
	comms := startGroup(t, world, o, ServerConfig{})
	ctx := context.Background()
	st := newStager(t, comms, shared, 4099)
	for _, n := range []int{0, 1, world - 1, world, 17, 100, 1000, 4099} {
		in := randomBufs(world, n, uint64(n))

		bufs := st.stage(in)
		mustEach(t, comms, func(r int, c *Comm) error { return c.AllReduceSum(ctx, bufs[r]) })
		for i := range n {
			want := ringSum(in, i, world)
			for r := range world {
				if math.Float32bits(bufs[r][i]) != math.Float32bits(want) {
					t.Fatalf("n %d: all-reduce sum: rank %d [%d] = %g, want %g", n, r, i, bufs[r][i], want)
				}
			}
		}

		bufs = st.stage(in)
		mustEach(t, comms, func(r int, c *Comm) error { return c.AllReduceAvg(ctx, bufs[r]) })
		for i := range n {
			want := ringSum(in, i, world) / float32(world)
			for r := range world {
				if math.Float32bits(bufs[r][i]) != math.Float32bits(want) {
					t.Fatalf("n %d: all-reduce avg: rank %d [%d] = %g, want %g", n, r, i, bufs[r][i], want)
				}
			}
		}

		for root := range world {
			bufs = st.stage(in)
			mustEach(t, comms, func(r int, c *Comm) error { return c.Broadcast(ctx, bufs[r], root) })
			for r := range world {
				for i := range n {
					if math.Float32bits(bufs[r][i]) != math.Float32bits(in[root][i]) {
						t.Fatalf("n %d: broadcast from %d: rank %d [%d] = %g, want %g", n, root, r, i, bufs[r][i], in[root][i])
					}
				}
			}
		}

		if n%world == 0 {
			bufs = st.stage(in)
			mustEach(t, comms, func(r int, c *Comm) error { return c.ReduceScatterSum(ctx, bufs[r]) })
			for r := range world {
				lo, hi := segment(n, world, r)
				for i := lo; i < hi; i++ {
					if want := ringSum(in, i, world); math.Float32bits(bufs[r][i]) != math.Float32bits(want) {
						t.Fatalf("n %d: reduce-scatter: rank %d [%d] = %g, want %g", n, r, i, bufs[r][i], want)
					}
				}
			}
			bufs = st.stage(in)
			mustEach(t, comms, func(r int, c *Comm) error { return c.AllGather(ctx, bufs[r]) })
			for r := range world {
				for i := range n {
					owner := i / (n / world)
					if math.Float32bits(bufs[r][i]) != math.Float32bits(in[owner][i]) {
						t.Fatalf("n %d: all-gather: rank %d [%d] = %g, want rank %d's %g", n, r, i, bufs[r][i], owner, in[owner][i])
					}
				}
			}
		} else if err := comms[0].ReduceScatterSum(ctx, in[0]); err == nil {
			t.Errorf("reduce-scatter of %d floats over %d ranks: no error", n, world)
		}
	}
	mustEach(t, comms, func(r int, c *Comm) error { return c.Barrier(ctx) })
}

// TestBarrierWaits: no rank leaves a barrier before the last one enters it.
func TestBarrierWaits(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: 30 * time.Second}, ServerConfig{})
	var mu sync.Mutex
	entered := 0
	mustEach(t, comms, func(r int, c *Comm) error {
		if r == 2 {
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		entered++
		mu.Unlock()
		if err := c.Barrier(context.Background()); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if entered != 3 {
			return fmt.Errorf("rank %d left the barrier with %d ranks in", r, entered)
		}
		return nil
	})
}

// TestMismatchDetected: ranks calling different collectives (or lengths) fail with
// a message saying so, instead of exchanging garbage.
func TestMismatchDetected(t *testing.T) {
	comms := startGroup(t, 2, Options{Timeout: 30 * time.Second}, ServerConfig{})
	errs := each(comms, func(r int, c *Comm) error { return c.AllReduceSum(context.Background(), make([]float32, 10+r)) })
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "disagree") {
			t.Errorf("rank %d: %v, want a disagreement", r, err)
		}
	}
	// The communicator is dead afterwards.
	if err := comms[0].Barrier(context.Background()); err == nil {
		t.Error("a collective after an abort succeeded")
	}
}
