package dist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Rank 0 publishes a value (NCCL's unique id, say); the others look it up,
// before or after it is set, through the store behind the job token.
func TestPublishLookup(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: 20 * time.Second}, ServerConfig{})
	id := bytes.Repeat([]byte{0xab, 0x01}, 64)
	got := make([][]byte, 3)
	errs := each(comms, func(r int, c *Comm) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if r == 0 {
			time.Sleep(100 * time.Millisecond) // the others ask first
			if err := c.Publish(ctx, "nccl-id", id); err != nil {
				return err
			}
		}
		v, err := c.Lookup(ctx, "nccl-id")
		got[r] = v
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if !bytes.Equal(got[r], id) {
			t.Errorf("rank %d got %x", r, got[r])
		}
	}
	// a key nobody publishes: the lookup ends with its context
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := comms[1].Lookup(ctx, "missing"); err == nil {
		t.Error("lookup of a missing key returned")
	}
}

// TestConcurrentLookups: Lookups of different keys on one rank at once each get
// their own key's value: a value is not taken (and dropped) by a Lookup of
// another key, which would then leave its own Lookup waiting for good.
func TestConcurrentLookups(t *testing.T) {
	comms := startGroup(t, 2, Options{Timeout: 20 * time.Second}, ServerConfig{})
	c := comms[1]
	for round := range 3 {
		other, key := fmt.Sprint("other-", round), fmt.Sprint("key-", round)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Lookups of a key published last, all waiting while key's value comes.
		const n = 8
		errs := make(chan error, n)
		for range n {
			go func() {
				v, err := c.Lookup(ctx, other)
				if err == nil && string(v) != other {
					err = fmt.Errorf("Lookup(%q) = %q", other, v)
				}
				errs <- err
			}()
		}
		time.Sleep(50 * time.Millisecond)
		go func() {
			time.Sleep(50 * time.Millisecond)
			comms[0].Publish(ctx, key, []byte(key))
		}()
		lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := c.Lookup(lctx, key)
		lcancel()
		if err != nil || string(v) != key {
			t.Fatalf("round %d: Lookup(%q) = %q, %v", round, key, v, err)
		}
		if err := comms[0].Publish(ctx, other, []byte(other)); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// TestStoreWriteFailureNamed: a Publish or Lookup whose request cannot be
// written to the store fails naming the request's key and the store's address
// and host, keeping the write's error as its cause, not with the bare socket error.
func TestStoreWriteFailureNamed(t *testing.T) {
	// No heartbeats: they would find the broken connection too, and the
	// communicator's abort would stand in for the errors under test.
	comms := startGroup(t, 2, Options{Timeout: 20 * time.Second, HeartbeatInterval: time.Hour}, ServerConfig{})
	c := comms[0]
	broken := errors.New("broken pipe (test)")
	c.store.w.mu.Lock()
	c.store.w.w = failingWriter{broken}
	c.store.w.mu.Unlock()
	want := fmt.Sprintf("rendezvous store at %s (the launcher of node 0)", c.store.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Publish(ctx, "nccl-id", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `publish "nccl-id"`) || !errors.Is(err, broken) {
		t.Errorf("publish: %v, want an error naming the key and the %s, caused by the write's", err, want)
	}
	_, err = c.Lookup(ctx, "nccl-id")
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `look up "nccl-id"`) || !errors.Is(err, broken) {
		t.Errorf("lookup: %v, want an error naming the key and the %s, caused by the write's", err, want)
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// fakeStore serves one client at a loopback address: it answers the hello,
// then hands the connection (its receive buffer small) to then; the returned
// client's writes have timeout (and it sends no heartbeats).
func fakeStore(t *testing.T, timeout time.Duration, then func(conn net.Conn)) *storeClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	served := make(chan struct{})
	t.Cleanup(func() { <-served })
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(16 << 10)
		if _, err := newMsgReader(conn).read(); err != nil {
			return
		}
		(&msgWriter{w: conn}).write(message{Type: msgOK})
		then(conn)
	}()
	sc, _, err := dialStore(context.Background(), ln.Addr().String(), "rank 0", message{Token: testToken, Role: roleWorker, World: 2, Addr: "127.0.0.1:1"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.close)
	sc.conn.(*net.TCPConn).SetWriteBuffer(16 << 10)
	sc.startHeartbeats(time.Hour, timeout, nil)
	return sc
}

// TestStoreWriteStalled: a Publish to a store that accepted the connection and
// then stopped reading (a stopped or hung process) fails once the store has
// taken none of it for the write timeout (the heartbeat timeout), naming the
// store, the key and the wait, and the store is lost; a later Lookup says so.
// (The write did not return.)
func TestStoreWriteStalled(t *testing.T) {
	const timeout = 300 * time.Millisecond
	stop := make(chan struct{})
	defer close(stop)
	sc := fakeStore(t, timeout, func(net.Conn) { <-stop })
	c := &Comm{rank: 1, world: 2, store: sc, log: testLogger(t), aborted: make(chan struct{})}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- c.Publish(context.Background(), "big", make([]byte, 2<<20)) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("publish to a store that reads nothing has not returned 10s on, its write timeout %s", timeout)
	}
	t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	for _, want := range []string{`dist: publish "big": the rendezvous store at ` + sc.addr + " (rank 0) took none of it for 300ms", "kill -CONT", "HINT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("publish: %v, want %q", err, want)
		}
	}
	select {
	case <-sc.lost:
		if want := `took none of the publish of "big" for 300ms`; !strings.Contains(sc.lostErr.Error(), want) {
			t.Errorf("lost: %v, want %q", sc.lostErr, want)
		}
	default:
		t.Fatal("the store is not lost after a stalled write")
	}
	_, err = c.Lookup(context.Background(), "other")
	if want := `dist: look up "other": the rendezvous store at ` + sc.addr + ` (rank 0) took none of the publish of "big"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("lookup after: %v, want %q", err, want)
	}
}

// TestStoreWriteSlowNotStalled: a store that reads slowly, but all along,
// takes a Publish that takes it longer than the write timeout to read.
func TestStoreWriteSlowNotStalled(t *testing.T) {
	const timeout = 500 * time.Millisecond
	got := make(chan message, 1)
	stop := make(chan struct{})
	defer close(stop)
	sc := fakeStore(t, timeout, func(conn net.Conn) {
		mr := newMsgReader(&slowReader{r: conn, n: 32 << 10, every: 20 * time.Millisecond})
		m, err := mr.read()
		if err != nil {
			t.Errorf("store: %v", err)
		}
		got <- m
		<-stop // (the connection stays open until the test ends)
	})
	c := &Comm{rank: 1, world: 2, store: sc, log: testLogger(t), aborted: make(chan struct{})}
	value := make([]byte, 1<<20)
	start := time.Now()
	if err := c.Publish(context.Background(), "big", value); err != nil {
		t.Fatalf("publish to a slow store: %v", err)
	}
	m := <-got
	took := time.Since(start)
	if m.Type != msgSet || len(m.Value) != len(value) {
		t.Errorf("the store read a %q of %d bytes, want a set of %d", m.Type, len(m.Value), len(value))
	}
	if took < timeout {
		t.Logf("the store read it within %s, less than the write timeout %s: the test proves little", took, timeout)
	}
	select {
	case <-sc.lost:
		t.Errorf("lost: %v", sc.lostErr)
	default:
	}
}

// slowReader reads at most n bytes every so often.
type slowReader struct {
	r     io.Reader
	n     int
	every time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	time.Sleep(r.every)
	return r.r.Read(p[:min(len(p), r.n)])
}

// TestWriteDeadlineAfterPause: a write whose deadline passed while this
// process did not run (stopped, or its machine suspended: the write returns
// long after its deadline, with nothing written) is tried again, not taken
// for a store that reads nothing; one that returns at its deadline is.
func TestWriteDeadlineAfterPause(t *testing.T) {
	const timeout = 100 * time.Millisecond
	paused := &deadlineConn{late: 4 * timeout}
	w := &msgWriter{w: paused, timeout: timeout}
	if err := w.write(message{Type: msgHB}); err != nil {
		t.Errorf("a write whose deadline passed in a pause: %v, want it tried again", err)
	}
	if paused.writes != 2 || !strings.Contains(paused.got.String(), `"type":"hb"`) {
		t.Errorf("%d writes, %q written; want a second that writes the heartbeat", paused.writes, paused.got.String())
	}
	stalled := &deadlineConn{late: timeout, always: true}
	w = &msgWriter{w: stalled, timeout: timeout}
	var st *stalledError
	if err := w.write(message{Type: msgHB}); !errors.As(err, &st) || st.after != timeout {
		t.Errorf("a write the peer takes nothing of: %v, want it stalled after %s", err, timeout)
	}
}

// deadlineConn is a connection whose first write (every write, with always)
// returns after late with nothing written and its deadline passed; the others
// write.
type deadlineConn struct {
	late   time.Duration
	always bool
	writes int
	got    bytes.Buffer
}

func (c *deadlineConn) SetWriteDeadline(time.Time) error { return nil }

func (c *deadlineConn) Write(p []byte) (int, error) {
	c.writes++
	if c.writes == 1 || c.always {
		time.Sleep(c.late)
		return 0, os.ErrDeadlineExceeded
	}
	return c.got.Write(p)
}

// slowValueStore serves one client at a loopback address: it answers the
// hello, reads the client's messages (answering none), and once asked for a key
// sends a value of size bytes in pieces of 4 KB every 20ms, the first n of
// them only when n > 0 (then nothing more). It returns a client whose
// heartbeats go every 20ms with heartbeat timeout timeout.
func slowValueStore(t *testing.T, timeout time.Duration, size, n int) *storeClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	stop := make(chan struct{})
	served := make(chan struct{})
	t.Cleanup(func() { <-served })
	t.Cleanup(func() { close(stop) }) // (runs before the wait for served)
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		mr := newMsgReader(conn)
		if _, err := mr.read(); err != nil {
			return
		}
		(&msgWriter{w: conn}).write(message{Type: msgOK})
		asked := make(chan string, 1)
		go func() {
			for {
				m, err := mr.read()
				if err != nil {
					return
				}
				if m.Type == msgGet {
					asked <- m.Key
				}
			}
		}()
		var key string
		select {
		case key = <-asked:
		case <-stop:
			return
		}
		b, _ := json.Marshal(message{Type: msgValue, Key: key, Value: bytes.Repeat([]byte{7}, size)})
		b = append(b, '\n')
		for i := 0; len(b) > 0 && (n <= 0 || i < n); i++ {
			k := min(len(b), 4<<10)
			if _, err := conn.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
			select {
			case <-time.After(20 * time.Millisecond):
			case <-stop:
				return
			}
		}
		<-stop // (the connection stays open until the test ends)
	}()
	sc, _, err := dialStore(context.Background(), ln.Addr().String(), "rank 0", message{Token: testToken, Role: roleWorker, World: 2, Addr: "127.0.0.1:1"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.close)
	sc.startHeartbeats(20*time.Millisecond, timeout, nil)
	return sc
}

// TestLookupSlowLargeValue: a Lookup whose value (large) the store sends slowly
// but steadily, taking longer than the heartbeat timeout, gets it, and the
// store is not taken for lost: bytes from the store are hearing from it. (A
// rank heard the store only once a message was complete: on a link under 270
// KB/s it took the store for silent, and lost, in the middle of a 4 MB value,
// the answers to its heartbeats queued behind it.)
func TestLookupSlowLargeValue(t *testing.T) {
	const timeout = time.Second
	// About 350 KB of JSON: 4 KB every 20ms takes about 1.8s. (A larger value
	// takes longer to parse under -race than the timeout.)
	const size = 256 << 10
	sc := slowValueStore(t, timeout, size, 0)
	c := &Comm{rank: 1, world: 2, store: sc, log: testLogger(t), aborted: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	v, err := c.Lookup(ctx, "big")
	took := time.Since(start)
	if err != nil {
		t.Fatalf("lookup of a value the store sends slowly (after %s, heartbeat timeout %s): %v", took.Round(time.Millisecond), timeout, err)
	}
	t.Logf("the value took %s, heartbeat timeout %s", took.Round(time.Millisecond), timeout)
	if len(v) != size {
		t.Errorf("value of %d bytes, want %d", len(v), size)
	}
	select {
	case <-sc.lost:
		t.Errorf("lost: %v", sc.lostErr)
	default:
	}
}

// TestStoreLostMidValue: a store that stops in the middle of a value (hung,
// after some of it) is still taken for lost about the heartbeat timeout after
// its last bytes, though it takes the rank's heartbeats (small writes the
// sockets' buffers would take from a hung store too do not count as hearing
// from it).
func TestStoreLostMidValue(t *testing.T) {
	const timeout = 300 * time.Millisecond
	sc := slowValueStore(t, timeout, 256<<10, 4)
	c := &Comm{rank: 1, world: 2, store: sc, log: testLogger(t), aborted: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Lookup(ctx, "big")
	took := time.Since(start)
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
	if want := "has not answered for"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("lookup from a store that stopped mid-value: %v, want %q", err, want)
	}
	if took < timeout {
		t.Errorf("lost after %s, before the heartbeat timeout %s", took, timeout)
	}
}

// TestPublishSlowLargeValue: a Publish of a large value that the store reads
// slowly but steadily, taking longer than the heartbeat timeout (the store
// answers the rank's heartbeats, which wait behind it, only after), succeeds
// and the store is not taken for lost: a store that takes bytes is heard
// from. (A rank on a link under 270 KB/s publishing 4 MB took the store for
// silent, and lost.)
func TestPublishSlowLargeValue(t *testing.T) {
	const timeout = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan message, 1)
	stop := make(chan struct{})
	served := make(chan struct{})
	defer func() { close(stop); <-served }()
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(16 << 10)
		mr := newMsgReader(&slowReader{r: conn, n: 4 << 10, every: 20 * time.Millisecond})
		if _, err := mr.read(); err != nil {
			return
		}
		w := &msgWriter{w: conn}
		w.write(message{Type: msgOK})
		go func() { <-stop; conn.Close() }()
		for {
			m, err := mr.read()
			if err != nil {
				return
			}
			switch m.Type {
			case msgHB:
				w.write(message{Type: msgHB})
			case msgSet:
				got <- m
			}
		}
	}()
	sc, _, err := dialStore(context.Background(), ln.Addr().String(), "rank 0", message{Token: testToken, Role: roleWorker, World: 2, Addr: "127.0.0.1:1"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.close()
	sc.conn.(*net.TCPConn).SetWriteBuffer(16 << 10)
	sc.startHeartbeats(20*time.Millisecond, timeout, nil)
	c := &Comm{rank: 1, world: 2, store: sc, log: testLogger(t), aborted: make(chan struct{})}
	value := make([]byte, 256<<10) // about 350 KB of JSON: 4 KB every 20ms takes about 1.8s
	start := time.Now()
	if err := c.Publish(context.Background(), "big", value); err != nil {
		t.Fatalf("publish to a slow store (after %s, heartbeat timeout %s): %v", time.Since(start).Round(time.Millisecond), timeout, err)
	}
	select {
	case m := <-got:
		t.Logf("the store had the value %s on, heartbeat timeout %s", time.Since(start).Round(time.Millisecond), timeout)
		if len(m.Value) != len(value) {
			t.Errorf("the store read %d bytes, want %d", len(m.Value), len(value))
		}
	case <-sc.lost:
		t.Fatalf("lost %s on: %v", time.Since(start).Round(time.Millisecond), sc.lostErr)
	case <-time.After(20 * time.Second):
		t.Fatal("the store has not had the value 20s on")
	}
	// The store answers the heartbeats again: it stays heard.
	time.Sleep(2 * timeout)
	select {
	case <-sc.lost:
		t.Errorf("lost: %v", sc.lostErr)
	default:
	}
}
