package dist

import (
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// die makes a rank vanish as a killed process does: its connections close with no
// goodbye.
func (c *Comm) die() {
	c.closed.Store(true)
	c.store.conn.Close()
	c.next.Close()
	c.prev.Close()
}

// waitAll runs f on the ranks in ranks and checks each fails within limit with a
// message containing want.
func expectFailures(t *testing.T, comms []*Comm, ranks []int, limit time.Duration, want string, f func(c *Comm) error) {
	t.Helper()
	start := time.Now()
	errs := make(chan struct {
		r   int
		err error
	}, len(ranks))
	for _, r := range ranks {
		go func() {
			errs <- struct {
				r   int
				err error
			}{r, f(comms[r])}
		}()
	}
	for range ranks {
		select {
		case e := <-errs:
			if e.err == nil || !strings.Contains(e.err.Error(), want) {
				t.Errorf("rank %d: %v, want an error containing %q", e.r, e.err, want)
			} else {
				t.Logf("rank %d after %s: %v", e.r, time.Since(start).Round(time.Millisecond), e.err)
			}
		case <-time.After(limit):
			t.Fatalf("ranks still waiting after %s", limit)
		}
	}
	for _, r := range ranks {
		select {
		case <-comms[r].Aborted():
		default:
			t.Errorf("rank %d: Aborted not closed", r)
		}
	}
}

// TestRankDies: a rank that vanishes in the middle of a collective fails every
// other rank within seconds, naming it, even the ranks not linked to it; also when
// the ranks pass chunks by reference (shared buffers).
func TestRankDies(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			comms := startGroup(t, 4, Options{Timeout: time.Minute}, ServerConfig{})
			bufs := make([][]float32, len(comms))
			for r, c := range comms {
				bufs[r] = make([]float32, 1000)
				if shared {
					bufs[r] = c.AllocShared(1000)
				}
			}
			go func() {
				time.Sleep(100 * time.Millisecond)
				comms[2].die()
			}()
			expectFailures(t, comms, []int{0, 1, 3}, 10*time.Second, "rank 2 disconnected", func(c *Comm) error {
				return c.AllReduceSum(context.Background(), bufs[c.rank])
			})
		})
	}
}

// TestRankFails: a rank that fails (its error reaches the store) stops the others
// with its message.
func TestRankFails(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: time.Minute}, ServerConfig{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		comms[1].Close(errString("out of disk"))
	}()
	expectFailures(t, comms, []int{0, 2}, 10*time.Second, "rank 1 failed: out of disk", func(c *Comm) error {
		return c.Barrier(context.Background())
	})
}

type errString string

func (e errString) Error() string { return string(e) }

// TestRankHangs: a rank that stops sending heartbeats (a stopped or wedged
// process) is named once the heartbeat timeout has passed.
func TestRankHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a heartbeat timeout")
	}
	comms := startGroup(t, 3, Options{Timeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second},
		ServerConfig{HeartbeatTimeout: 600 * time.Millisecond})
	comms[1].store.paused.Store(true)
	expectFailures(t, comms, []int{0, 2}, 10*time.Second, "rank 1 sent no heartbeat", func(c *Comm) error {
		err := c.Barrier(context.Background())
		// The store's sub-second timeout reads in milliseconds (it read "0s").
		if want := regexp.MustCompile(`no heartbeat for [1-9][0-9]*ms `); err != nil && !want.MatchString(err.Error()) {
			t.Errorf("rank %d: %v, want %q", c.rank, err, want)
		}
		return err
	})
}

// TestCollectiveTimeout: a rank that lives (heartbeats) but never arrives at a
// collective is named when the others' collective times out.
func TestCollectiveTimeout(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: 500 * time.Millisecond}, ServerConfig{})
	expectFailures(t, comms, []int{0, 1}, 10*time.Second, "rank 2 did not arrive at collective #1", func(c *Comm) error {
		return c.AllReduceSum(context.Background(), make([]float32, 10))
	})
}

// TestFinishedRankNotNamedLate: a rank that has finished the collective the
// group times out in is not named as one that did not arrive at it (it reported
// the same position as one that never came): a broadcast's root, whose sends
// are done, has finished before the rank after it arrives. The test fires the
// timer of the waiting rank's collective itself.
func TestFinishedRankNotNamedLate(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: time.Minute}, ServerConfig{})
	if err := comms[0].Broadcast(context.Background(), make([]float32, 10), 0); err != nil {
		t.Fatalf("root: %v", err) // sent, into the link to rank 1, which is not in the broadcast
	}
	timers := make(chan func(), 1)
	afterFunc = func(d time.Duration, f func()) *time.Timer {
		timers <- f
		return time.AfterFunc(time.Hour, func() {}) // (stopped when the collective ends)
	}
	t.Cleanup(func() { afterFunc = time.AfterFunc })
	done := make(chan error, 1)
	// Rank 2 waits for rank 1, which never comes, until its deadline passes.
	go func() { done <- comms[2].Broadcast(context.Background(), make([]float32, 10), 0) }()
	(<-timers)()
	err := <-done
	want := "rank 1 did not arrive at collective #1 (broadcast"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("rank 2: %v, want an error containing %q (rank 0, which finished, not named)", err, want)
	}
}

// TestStoreLostWhileWriteStuck: a client whose write to the store does not
// return (a store that stopped reading: a stopped process, a host gone without
// a word, once the sockets' buffers are full) still declares the store lost
// after the heartbeat timeout (the check came after each heartbeat's write, and
// waited for it). The store here answers the hello, then reads nothing and says
// nothing; the client's writes block until the test ends.
func TestStoreLostWhileWriteStuck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	storeSide := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(storeSide)
			return
		}
		storeSide <- conn // (held open, unread, until the test ends)
		newMsgReader(conn).read()
		(&msgWriter{w: conn}).write(message{Type: msgOK})
	}()
	sc, _, err := dialStore(context.Background(), ln.Addr().String(), "rank 0", message{Token: testToken, Role: roleWorker, World: 2, Addr: "127.0.0.1:1"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if conn, ok := <-storeSide; ok {
		defer conn.Close()
	}
	stuck := &stuckWriter{wrote: make(chan struct{}), released: make(chan struct{})}
	sc.w.mu.Lock()
	sc.w.w = stuck
	sc.w.mu.Unlock()
	defer sc.close()
	defer stuck.release()
	const timeout = 300 * time.Millisecond
	sc.startHeartbeats(10*time.Millisecond, timeout, nil)
	<-stuck.wrote // a heartbeat's write is stuck
	select {
	case <-sc.lost:
		// (A sub-second wait read "0s".)
		if want := regexp.MustCompile(`has not answered for [1-9][0-9]*ms:`); !want.MatchString(sc.lostErr.Error()) {
			t.Errorf("lost: %v, want %q", sc.lostErr, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the store is not declared lost 10s on, its heartbeat timeout %s: the check waits for a write that does not return", timeout)
	}
}

// stuckWriter is a connection to a store that takes nothing: a write blocks
// until release.
type stuckWriter struct {
	wrote       chan struct{} // closed at the first write
	wroteOnce   sync.Once
	released    chan struct{}
	releaseOnce sync.Once
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.wroteOnce.Do(func() { close(w.wrote) })
	<-w.released
	return 0, net.ErrClosed
}

func (w *stuckWriter) release() { w.releaseOnce.Do(func() { close(w.released) }) }

// TestStoreLost: the ranks notice when the store goes away.
func TestStoreLost(t *testing.T) {
	s, port := startStore(t, 2, ServerConfig{})
	comms := make([]*Comm, 2)
	done := make(chan error, 2)
	for r := range 2 {
		go func() {
			var err error
			comms[r], err = Init(context.Background(), Place{Rank: r, World: 2, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Token: testToken, Logger: testLogger(t)})
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	expectFailures(t, comms, []int{0, 1}, 10*time.Second, "lost the rendezvous store", func(c *Comm) error {
		<-c.Aborted()
		return c.Barrier(context.Background())
	})
}

// TestRendezvousTimeout: a rendezvous that times out names the missing ranks.
func TestRendezvousTimeout(t *testing.T) {
	_, port := startStore(t, 4, ServerConfig{})
	errs := make(chan error, 2)
	for _, r := range []int{0, 2} {
		go func() {
			// Rank 2 waits longer: rank 0 times out while rank 2 is there.
			_, err := Init(context.Background(), Place{Rank: r, World: 4, MasterAddr: "127.0.0.1", MasterPort: port},
				Options{Token: testToken, Timeout: time.Duration(1+r) * time.Second, Logger: testLogger(t)})
			errs <- err
		}()
	}
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "ranks 1, 3 did not arrive") || !strings.Contains(err.Error(), "rank 0 of 4") {
		t.Errorf("rendezvous: %v, want ranks 1, 3 named", err)
	}
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "ranks 0, 1, 3 did not arrive") {
		t.Errorf("rendezvous: %v, want ranks 0, 1, 3 named (rank 0 gave up)", err)
	}
}

// TestTokenRefused: the store and the ring refuse a process without the job's
// token.
func TestTokenRefused(t *testing.T) {
	_, port := startStore(t, 2, ServerConfig{})
	_, err := Init(context.Background(), Place{Rank: 0, World: 2, MasterAddr: "127.0.0.1", MasterPort: port},
		Options{Token: "not-the-token", Timeout: 5 * time.Second, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "wrong job token") {
		t.Errorf("wrong token: %v, want a refusal", err)
	}

	// A ring listener refuses a link with the wrong token.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			writeRingHello(conn, 0, 1, "nope")
			conn.Close()
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := readRingHello(conn, testToken); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("ring hello with a wrong token: %v", err)
	}
}

// TestRestartGeneration: a rank that joins again while its generation runs (its
// launcher restarted it) fails that generation, naming it, and a new generation
// gathers.
func TestRestartGeneration(t *testing.T) {
	s, port := startStore(t, 2, ServerConfig{})
	events := s.Subscribe()
	join := func(r int) (*Comm, error) {
		return Init(context.Background(), Place{Rank: r, World: 2, MasterAddr: "127.0.0.1", MasterPort: port},
			Options{Token: testToken, Timeout: 10 * time.Second, Logger: testLogger(t)})
	}
	first := make([]*Comm, 2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			var err error
			first[r], err = join(r)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ev := <-events; ev.Kind != EventStart || ev.Gen != 0 {
		t.Fatalf("event %+v, want start of generation 0", ev)
	}
	second := make([]*Comm, 2)
	go func() {
		var err error
		second[1], err = join(1)
		errs <- err
	}()
	if ev := <-events; ev.Kind != EventAbort || ev.Gen != 0 || !strings.Contains(ev.Reason, "rank 1 joined again") {
		t.Fatalf("event %+v, want generation 0 aborted by rank 1's return", ev)
	}
	<-first[0].Aborted()
	first[0].Close(first[0].Err())
	first[1].Close(first[1].Err())
	go func() {
		var err error
		second[0], err = join(0)
		errs <- err
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if second[0].Generation() != 1 || second[1].Generation() != 1 {
		t.Errorf("generations %d %d, want 1", second[0].Generation(), second[1].Generation())
	}
	mustEach(t, second, func(r int, c *Comm) error { return c.Barrier(context.Background()) })
	for _, c := range second {
		c.Close(nil)
	}
}

// TestBrokenLinkFailsPromptly: a rank whose link from the previous rank breaks
// (over TCP, or a Unix socket and shared memory) fails its collective within the
// grace period, though the next rank, alive but busy elsewhere, does not read
// what it sends (it does not wait for that send).
func TestBrokenLinkFailsPromptly(t *testing.T) {
	for _, tcp := range []bool{true, false} {
		t.Run(fmt.Sprint("tcp=", tcp), func(t *testing.T) { testBrokenLinkFailsPromptly(t, tcp) })
	}
}

func testBrokenLinkFailsPromptly(t *testing.T, tcp bool) {
	shortGrace(t, 100*time.Millisecond) // (no verdict comes: rank 2 lives)
	comms := startGroup(t, 3, Options{Timeout: time.Minute, TCPOnly: tcp}, ServerConfig{})
	comms[2].next.Close() // the link 2 → 0 breaks; rank 2 lives on
	release := make(chan struct{})
	late := make(chan error, 1)
	go func() { // rank 1 arrives only when released
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		late <- comms[1].AllReduceSum(context.Background(), make([]float32, 10))
	}()
	defer func() { close(release); <-late }()
	start := time.Now()
	err := comms[0].AllReduceSum(context.Background(), make([]float32, 32<<20)) // more than the links hold
	if took := time.Since(start); err == nil || took > failGrace+5*time.Second {
		t.Fatalf("rank 0 after %s: %v, want a failure within about %s", took.Round(time.Millisecond), err, failGrace)
	}
	if !strings.Contains(err.Error(), "receive from rank 2") {
		t.Errorf("rank 0: %v, want the broken link from rank 2 named", err)
	}
}

// TestFailedSendStopsCollective: a rank whose link to the next rank breaks
// stops its collective when the send fails and reports the send, over TCP, a
// Unix socket and shared memory, though the previous rank, alive but busy
// elsewhere, sends nothing (it did not wait for that receive, for the
// collective timeout, to report the ranks late at it instead).
func TestFailedSendStopsCollective(t *testing.T) {
	for _, tr := range transports[:3] {
		t.Run(tr.name, func(t *testing.T) { testFailedSendStopsCollective(t, tr.o) })
	}
}

func testFailedSendStopsCollective(t *testing.T, o Options) {
	o.Timeout = time.Minute
	// No other rank fails: no verdict comes from the store, and rank 0 reports
	// its send once the grace has passed (the default's 3s, waited out, was most
	// of the test's time).
	shortGrace(t, 100*time.Millisecond)
	comms := startGroup(t, 3, o, ServerConfig{})
	comms[0].next.Close() // the link 0 → 1 breaks; rank 0 lives on
	release := make(chan struct{})
	late := make(chan error, 2)
	for _, c := range comms[1:] { // ranks 1 and 2 arrive only when released
		go func() {
			<-release
			late <- c.AllReduceSum(context.Background(), make([]float32, 10))
		}()
	}
	defer func() {
		close(release)
		<-late
		<-late
	}()
	// More than the links hold: the shared-memory ring fills, and its sender
	// finds the link closed.
	start := time.Now()
	err := comms[0].AllReduceSum(context.Background(), make([]float32, 32<<20))
	if err == nil || !strings.Contains(err.Error(), "send to rank 1") {
		t.Fatalf("rank 0: %v, want the broken link to rank 1 named", err)
	}
	t.Logf("rank 0 after %s: %v", time.Since(start).Round(time.Millisecond), err)
}

// shortGrace makes the communicators Init makes until the test ends wait d
// (not failGrace's 3s) for the store's verdict on a failure they saw, where
// the test expects none to come.
func shortGrace(t *testing.T, d time.Duration) {
	old := failGrace
	failGrace = d
	t.Cleanup(func() { failGrace = old })
}

// TestRendezvousStartWinsAtTheDeadline: a start from the store that is there
// when the rendezvous's deadline passes (both ready at once) ends the wait as a
// start, not as a timeout naming ranks that did arrive; a deadline with no
// start still times out, naming the missing ranks.
func TestRendezvousStartWinsAtTheDeadline(t *testing.T) {
	c := &Comm{rank: 0, world: 2, log: testLogger(t), aborted: make(chan struct{})}
	sc := &storeClient{events: make(chan message, 256), lost: make(chan struct{})}
	place := Place{Rank: 0, World: 2}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	// (select picks at random among ready cases: many tries make a lost start
	// all but certain to show.)
	for i := range 64 {
		sc.events <- message{Type: msgWaiting, Missing: []int{1}}
		sc.events <- message{Type: msgStart, Gen: i, Addrs: addrs}
		got, _, err := c.awaitStart(ctx, sc, "127.0.0.1:29500", place, time.Second)
		if err != nil || len(got) != 2 || c.gen != i {
			t.Fatalf("try %d: %v %v (generation %d), want the start of generation %d", i, got, err, c.gen, i)
		}
	}
	sc.events <- message{Type: msgWaiting, Missing: []int{1}}
	if _, _, err := c.awaitStart(ctx, sc, "127.0.0.1:29500", place, time.Second); err == nil || !strings.Contains(err.Error(), "rank 1 did not arrive") {
		t.Errorf("no start: %v, want a timeout naming rank 1", err)
	}
}

// TestCompletedCollectiveNotReportedLate: a collective's timer that fires as
// the collective completes (it had fired, and had not yet reported, when the
// last chunk came) reports nothing: the collective returns success, the store
// hears of no timeout (which would fail the group, naming this rank as not
// arrived), and the communicator lives on.
func TestCompletedCollectiveNotReportedLate(t *testing.T) {
	comms := startGroup(t, 2, Options{Timeout: time.Minute}, ServerConfig{})
	timers := make(chan func(), 2)
	afterFunc = func(d time.Duration, f func()) *time.Timer {
		timers <- f
		return time.AfterFunc(time.Hour, func() {}) // (stopped when the collective ends)
	}
	fired, resume := make(chan struct{}), make(chan struct{})
	collectiveTimerHook = func(c *Comm) {
		close(fired)
		<-resume
	}
	t.Cleanup(func() { afterFunc, collectiveTimerHook = time.AfterFunc, nil })
	sent := &recordingWriter{w: comms[0].store.w.w}
	comms[0].store.w.mu.Lock()
	comms[0].store.w.w = sent
	comms[0].store.w.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- comms[0].AllReduceSum(context.Background(), make([]float32, 10)) }()
	timer := <-timers // rank 0's, its collective under way (rank 1 not in it yet)
	timerDone := make(chan struct{})
	go func() {
		timer() // fires: the deadline has come
		close(timerDone)
	}()
	<-fired
	// The collective completes while the timer goes about its report.
	if err := comms[1].AllReduceSum(context.Background(), make([]float32, 10)); err != nil {
		t.Fatalf("rank 1: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("rank 0: %v, want success", err)
	}
	close(resume)
	<-timerDone
	if sent.has(msgTimeout) {
		t.Errorf("rank 0 reported a timeout of a collective that had completed")
	}
	if err := comms[0].Err(); err != nil {
		t.Errorf("rank 0's communicator: %v, want it alive", err)
	}
}

// recordingWriter passes writes of store messages on to w, and keeps their types.
type recordingWriter struct {
	w     io.Writer
	mu    sync.Mutex
	types []string
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	if m, err := parseMessage(p); err == nil {
		r.mu.Lock()
		r.types = append(r.types, m.Type)
		r.mu.Unlock()
	}
	return r.w.Write(p)
}

// has reports whether a message of type typ was written.
func (r *recordingWriter) has(typ string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.types, typ)
}

// TestLeftRankNamedAsLeft: a rank that finished and left the job while the
// others go on to a collective is named as having left, not as alive but stuck
// before the collective (its heartbeats had stopped with its leave), and the abort
// says no restart cures it (Event.Rerun false: the ranks run different collectives).
func TestLeftRankNamedAsLeft(t *testing.T) {
	comms, s := startGroupStore(t, 3, Options{Timeout: 500 * time.Millisecond}, ServerConfig{})
	events := s.Subscribe()
	closed := make(chan error, 1)
	go func() { closed <- comms[2].Close(nil) }() // waits for no one: rank 2 hosts no store
	for left, deadline := false, time.Now().Add(10*time.Second); !left; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not hear rank 2 leave within 10s")
		}
		s.mu.Lock()
		left = s.members[2] != nil && s.members[2].left
		s.mu.Unlock()
	}
	want := "rank 2 finished and left the job before collective #1 (all-reduce sum)"
	expectFailures(t, comms, []int{0, 1}, 10*time.Second, want, func(c *Comm) error {
		return c.AllReduceSum(context.Background(), make([]float32, 10))
	})
	if err := <-closed; err != nil {
		t.Errorf("rank 2's Close: %v", err)
	}
	for ev := range events {
		if ev.Kind == EventAbort {
			if !strings.Contains(ev.Reason, want) || ev.Rerun {
				t.Errorf("abort %+v, want %q and no rerun", ev, want)
			}
			break
		}
	}
}
