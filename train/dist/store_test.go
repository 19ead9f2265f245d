package dist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawWorker joins the store at port as rank of a world of two, speaking the
// protocol itself.
func rawWorker(t *testing.T, port, rank int) (net.Conn, *msgWriter) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w := &msgWriter{w: conn}
	if err := w.write(message{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: rank, World: 2, Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	return conn, w
}

// TestStoreStuckClient: a client that stops reading (its process stopped, its
// host gone without a word) does not stall the store for the others: they still
// get answers, and the store drops the stuck client after the heartbeat timeout.
func TestStoreStuckClient(t *testing.T) {
	_, port := startStore(t, 2, ServerConfig{HeartbeatTimeout: 3 * time.Second})
	good, gw := rawWorker(t, port, 0)
	_, sw := rawWorker(t, port, 1)
	mr := newMsgReader(good)
	next := func(want string) message {
		t.Helper()
		good.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			m, err := mr.read()
			if err != nil {
				t.Fatalf("waiting for %q from the store: %v", want, err)
			}
			if m.Type == want {
				return m
			}
		}
	}
	next(msgStart)
	// Rank 1 asks for a big value many times over and reads none of the answers:
	// far more than the sockets' buffers hold.
	gw.write(message{Type: msgSet, Key: "big", Value: bytes.Repeat([]byte{1}, 2<<20)})
	for range 40 {
		if err := sw.write(message{Type: msgGet, Key: "big"}); err != nil {
			t.Fatal(err)
		}
	}
	// Both keep beating: only what the store writes to rank 1 can tell it is gone.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				gw.write(message{Type: msgHB})
				sw.write(message{Type: msgHB})
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	next(msgHB)
	next(msgHB)
	// ... and the store drops rank 1 once it has taken nothing for the heartbeat
	// timeout.
	// (Between one and two timeouts after it last took some: the sockets'
	// buffers may take some after it stopped.)
	good.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		m, err := mr.read()
		if err != nil {
			t.Fatalf("rank 0 was not told that rank 1 was dropped: %v", err)
		}
		if m.Type == msgAbort {
			// (On a loaded machine the store may find it did not run for a
			// while, and say so first, blaming no rank.)
			paused := m.Rank == -1 && strings.Contains(m.Reason, "did not run for")
			if (m.Rank != 1 && !paused) || !strings.Contains(m.Reason, "rank 1 took no store message") {
				t.Errorf("abort %+v, want rank 1 blamed for taking no message", m)
			}
			break
		}
	}
}

// TestStoreCloseFlushes: what the store had for its clients when it closes
// (a GiveUp's fatal) still reaches them.
func TestStoreCloseFlushes(t *testing.T) {
	srv, port := startStore(t, 2, ServerConfig{})
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := &msgWriter{w: conn}
	w.write(message{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleAgent, Rank: -1, Node: 1})
	mr := newMsgReader(conn)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if m, err := mr.read(); err != nil || m.Type != msgOK {
		t.Fatalf("hello: %+v %v", m, err)
	}
	srv.GiveUp("node 0: out of restarts")
	srv.Close()
	if m, err := mr.read(); err != nil || m.Type != msgFatal {
		t.Fatalf("after GiveUp and Close: %+v %v, want the fatal message", m, err)
	}
}

// TestReadable: durations in messages read to the second from a second up, as
// they did, and to the millisecond below it: a sub-second timeout does not read
// "0s".
func TestReadable(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{15*time.Second + 300*time.Millisecond, "15s"},
		{2*time.Minute + 30*time.Second + 400*time.Millisecond, "2m30s"},
		{time.Second, "1s"},
		{1600 * time.Millisecond, "2s"},
		{250*time.Millisecond + 400*time.Microsecond, "250ms"},
		{310 * time.Millisecond, "310ms"},
		{999*time.Millisecond + 600*time.Microsecond, "1s"},
		{1500 * time.Microsecond, "2ms"},
		{1234 * time.Nanosecond, "1µs"},
		{0, "0s"},
	} {
		if got := readable(tc.d).String(); got != tc.want {
			t.Errorf("readable(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

// TestAbortSaysExiting: a generation failed by a rank's own report (Comm.Close with
// its error) tells the launchers, and the ranks, that this rank is exiting with it
// (Event.Exiting: its launcher leaves it to exit rather than stop it); one failed by
// a rank that disconnected does not, and says instead that a restart can cure it
// (Event.Rerun: the launcher that gives up names a rerun as the next step).
func TestAbortSaysExiting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exiting bool
	}{{"fail", true}, {"disconnect", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s, port := startStore(t, 2, ServerConfig{})
			events := s.Subscribe()
			c0, _ := rawWorker(t, port, 0)
			c1, w1 := rawWorker(t, port, 1)
			for ev := range events {
				if ev.Kind == EventStart {
					break
				}
			}
			if tc.exiting {
				w1.write(message{Type: msgFail, Reason: "out of cheese"})
			} else {
				c1.Close()
			}
			var ev Event
			select {
			case ev = <-events:
			case <-time.After(5 * time.Second):
				t.Fatal("no event after rank 1's failure")
			}
			if ev.Kind != EventAbort || ev.Rank != 1 || ev.Exiting != tc.exiting || ev.Rerun == tc.exiting {
				t.Errorf("event %+v, want an abort of rank 1 with exiting %t and rerun %t", ev, tc.exiting, !tc.exiting)
			}
			mr := newMsgReader(c0)
			c0.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				m, err := mr.read()
				if err != nil {
					t.Fatalf("rank 0 heard no abort: %v", err)
				}
				if m.Type == msgAbort {
					if m.Exiting != tc.exiting || m.Rerun == tc.exiting {
						t.Errorf("rank 0's abort %+v, want exiting %t and rerun %t", m, tc.exiting, !tc.exiting)
					}
					break
				}
			}
		})
	}
}

// smallBufListener is a store's listener whose connections have small send
// buffers: the kernel holds little of a large message, so how fast the client
// reads decides how long the store's write takes.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// bigValueClient starts a store of two ranks with heartbeat timeout timeout
// whose connections have small buffers, joins it as rank 0 (a raw client with
// a small receive buffer), publishes a value of size bytes and asks for it,
// while the generation gathers (no heartbeats needed). It returns rank 0's
// connection, whose next messages are the store's answers (ok, waiting, the
// value), its writer, and the store's port.
func bigValueClient(t *testing.T, timeout time.Duration, size int) (net.Conn, *msgWriter, int) {
	t.Helper()
	_, conn, w, port := bigValueStore(t, timeout, size)
	return conn, w, port
}

// bigValueStore is bigValueClient with the store.
func bigValueStore(t *testing.T, timeout time.Duration, size int) (*Server, net.Conn, *msgWriter, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(smallBufListener{ln}, ServerConfig{Token: testToken, World: 2, HeartbeatTimeout: timeout, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	w := &msgWriter{w: conn}
	for _, m := range []message{
		{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: 0, World: 2, Addr: "127.0.0.1:1"},
		{Type: msgSet, Key: "big", Value: bytes.Repeat([]byte{7}, size)},
		{Type: msgGet, Key: "big"},
	} {
		if err := w.write(m); err != nil {
			t.Fatal(err)
		}
	}
	return s, conn, w, ln.Addr().(*net.TCPAddr).Port
}

// TestStoreCloseFlushesSlowClient: a client that reads slowly but steadily gets
// a GiveUp's fatal queued behind a large value, though the value takes it longer
// than a second (Close gave the clients a second in all, and cut the fatal off).
func TestStoreCloseFlushesSlowClient(t *testing.T) {
	const size = 2 << 20 // about 2.8 MB of JSON: 16 KB every 20ms takes about 3.5s
	s, conn, w, _ := bigValueStore(t, time.Second, size)
	// A heartbeat after the get: once the store has handled it (its seq), the
	// value is queued.
	if err := w.write(message{Type: msgHB, Seq: 42}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not handle the heartbeat within 10s")
		}
		s.mu.Lock()
		handled := false
		for p := range s.peers {
			handled = handled || p.seq == 42
		}
		s.mu.Unlock()
		if handled {
			break
		}
	}
	s.GiveUp("node 0: out of restarts")
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	mr := newMsgReader(&slowReader{r: conn, n: 16 << 10, every: 20 * time.Millisecond})
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	start, gotValue := time.Now(), false
	for {
		m, err := mr.read()
		if err != nil {
			t.Fatalf("after %s (value read: %t): %v, want the fatal message", time.Since(start).Round(time.Millisecond), gotValue, err)
		}
		gotValue = gotValue || (m.Type == msgValue && len(m.Value) == size)
		if m.Type == msgFatal {
			break
		}
	}
	t.Logf("the value and the fatal took %s to read", time.Since(start).Round(time.Millisecond))
	if !gotValue {
		t.Error("the fatal came without the value before it")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("Close still waiting 10s after the client took everything")
	}
}

// TestStoreSlowClientNotDropped: a client that reads a large answer (a
// Lookup's value) slowly but steadily gets all of it, though it takes longer
// than the heartbeat timeout, and is not dropped: the store drops a client
// only when it takes none of a message for the timeout. (The whole message had
// one deadline, the heartbeat timeout: a rank alive on a link under 270 KB/s
// was dropped by a 4 MB answer as if it were gone.)
func TestStoreSlowClientNotDropped(t *testing.T) {
	const timeout = time.Second
	const size = 1 << 20 // about 1.4 MB of JSON: 16 KB every 20ms takes about 1.8s
	conn, w, _ := bigValueClient(t, timeout, size)
	mr := newMsgReader(&slowReader{r: conn, n: 16 << 10, every: 20 * time.Millisecond})
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var start time.Time
	for {
		m, err := mr.read()
		if err != nil {
			t.Fatalf("the slow client lost the store before its value: %v", err)
		}
		if start.IsZero() {
			start = time.Now() // (ok: the value follows the waiting message)
		}
		if m.Type == msgValue {
			if m.Key != "big" || len(m.Value) != size {
				t.Fatalf("value of %q, %d bytes; want big, %d", m.Key, len(m.Value), size)
			}
			break
		}
	}
	took := time.Since(start)
	t.Logf("the value took %s to read, heartbeat timeout %s", took.Round(time.Millisecond), timeout)
	if took < timeout {
		t.Logf("read within the heartbeat timeout: the test proves little")
	}
	// The client is still connected: the store answers a heartbeat.
	if err := w.write(message{Type: msgHB}); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if m, err := mr.read(); err != nil || m.Type != msgHB {
		t.Fatalf("after the value: %+v, %v; want the store's answer to a heartbeat", m, err)
	}
}

// TestStoreStoppedClientDropped: a client that stops reading in the middle of a
// large answer is dropped once it has taken none of it for the heartbeat
// timeout (between one and two timeouts after it last took some), its
// generation failing with the reason.
func TestStoreStoppedClientDropped(t *testing.T) {
	const timeout = time.Second
	conn, w0, port := bigValueClient(t, timeout, 1<<20)
	// Rank 0 reads the start of the value (so the store has it all), then
	// nothing more; rank 1 joins and the generation starts. Both keep beating:
	// only what the store writes to rank 0 can tell it is gone.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conn, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	c1, w1 := rawWorker(t, port, 1)
	stop := make(chan struct{})
	beating := make(chan struct{})
	defer func() { close(stop); <-beating }()
	go func() {
		defer close(beating)
		tick := time.NewTicker(timeout / 6)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				w0.write(message{Type: msgHB})
				w1.write(message{Type: msgHB})
			}
		}
	}()
	mr := newMsgReader(c1)
	c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		m, err := mr.read()
		if err != nil {
			t.Fatalf("rank 1 heard no abort %s after rank 0 stopped reading (heartbeat timeout %s): %v", time.Since(stopped).Round(time.Millisecond), timeout, err)
		}
		if m.Type != msgAbort {
			continue
		}
		after := time.Since(stopped)
		t.Logf("dropped %s after the client stopped reading: %s", after.Round(time.Millisecond), m.Reason)
		// (On a loaded machine the store may find it did not run for a while,
		// and say so first, blaming no rank.)
		paused := m.Rank == -1 && strings.Contains(m.Reason, "did not run for")
		if want := "rank 0 took no store message for 1s, and the store dropped it"; (m.Rank != 0 && !paused) || !strings.Contains(m.Reason, want) {
			t.Errorf("abort %+v, want rank 0 blamed with %q", m, want)
		}
		if after < timeout*9/10 {
			t.Errorf("dropped %s after the client stopped reading, before the heartbeat timeout %s", after, timeout)
		}
		return
	}
}

// TestStoreSlowPublishNotHung: a rank whose large Publish reaches the store
// slowly but steadily, taking longer than the heartbeat timeout (its
// heartbeats wait behind it), is not failed as hung: bytes from a rank count
// as hearing from it. (The store heard a rank only at a heartbeat's end: a
// rank on a link under 270 KB/s publishing 4 MB "sent no heartbeat".) One that
// stops in the middle of its message still is, after the heartbeat timeout.
func TestStoreSlowPublishNotHung(t *testing.T) {
	const timeout = time.Second
	for _, stops := range []bool{false, true} {
		t.Run(map[bool]string{false: "steady", true: "stops"}[stops], func(t *testing.T) {
			s, port := startStore(t, 1, ServerConfig{HeartbeatTimeout: timeout})
			events := s.Subscribe()
			conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			w := &msgWriter{w: conn}
			if err := w.write(message{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: 0, World: 1, Addr: "127.0.0.1:1"}); err != nil {
				t.Fatal(err)
			}
			if ev := <-events; ev.Kind != EventStart {
				t.Fatalf("event %+v, want the start", ev)
			}
			// About 350 KB of JSON in pieces of 4 KB every 20ms: about 1.8s;
			// the first 8 pieces only when it stops. (A larger value takes
			// the store longer to parse under -race than the timeout.)
			b, _ := json.Marshal(message{Type: msgSet, Key: "big", Value: bytes.Repeat([]byte{7}, 256<<10)})
			b = append(b, '\n')
			start := time.Now()
			for i := 0; len(b) > 0 && (!stops || i < 8); i++ {
				k := min(len(b), 4<<10)
				if _, err := conn.Write(b[:k]); err != nil {
					t.Fatal(err)
				}
				b = b[k:]
				time.Sleep(20 * time.Millisecond)
			}
			if stops {
				select {
				case ev := <-events:
					t.Logf("%s after the first piece: %s", time.Since(start).Round(time.Millisecond), ev.Reason)
					if want := "rank 0 sent no heartbeat for"; ev.Kind != EventAbort || !strings.Contains(ev.Reason, want) {
						t.Errorf("event %+v, want an abort saying %q", ev, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("a rank that stopped in the middle of a message is not failed %s on, heartbeat timeout %s", time.Since(start).Round(time.Millisecond), timeout)
				}
				return
			}
			t.Logf("the publish took %s, heartbeat timeout %s", time.Since(start).Round(time.Millisecond), timeout)
			// The rank beats again, as its heartbeats waited behind the publish.
			stop := make(chan struct{})
			beating := make(chan struct{})
			defer func() { close(stop); <-beating }()
			go func() {
				defer close(beating)
				tick := time.NewTicker(timeout / 6)
				defer tick.Stop()
				for {
					w.write(message{Type: msgHB})
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			// The store has the value: a get is answered.
			w.write(message{Type: msgGet, Key: "big"})
			mr := newMsgReader(conn)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				m, err := mr.read()
				if err != nil {
					t.Fatalf("after a slow publish: %v", err)
				}
				if m.Type == msgAbort {
					t.Fatalf("the generation failed: %s", m.Reason)
				}
				if m.Type == msgValue {
					break
				}
			}
			select {
			case ev := <-events:
				t.Errorf("event %+v during a slow publish", ev)
			default:
			}
		})
	}
}

// TestStoreCloseBoundedWithStuckClients: Close waits for the clients to take what
// was queued for them up to closeFlush in all, however many of them take nothing
// (one timer's single tick ended the wait for the first such client only, and
// Close waited for each other one until its writer gave up on it, a heartbeat
// timeout or two later).
func TestStoreCloseBoundedWithStuckClients(t *testing.T) {
	old := closeFlush
	t.Cleanup(func() { closeFlush = old }) // after the store's Close (cleanups run last first)
	closeFlush = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(smallBufListener{ln}, ServerConfig{Token: testToken, World: 4, HeartbeatTimeout: time.Minute, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const size = 2 << 20
	for rank := range 3 {
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.(*net.TCPConn).SetReadBuffer(16 << 10)
		w := &msgWriter{w: conn}
		msgs := []message{{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: rank, World: 4, Addr: "127.0.0.1:1"}}
		if rank == 0 {
			msgs = append(msgs, message{Type: msgSet, Key: "big", Value: bytes.Repeat([]byte{7}, size)})
		}
		msgs = append(msgs, message{Type: msgGet, Key: "big"}, message{Type: msgHB, Seq: 42})
		for _, m := range msgs {
			if err := w.write(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every client's value is queued once the store has handled its heartbeat.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not handle the heartbeats within 10s")
		}
		s.mu.Lock()
		handled := 0
		for p := range s.peers {
			if p.seq == 42 {
				handled++
			}
		}
		s.mu.Unlock()
		if handled == 3 {
			break
		}
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("Close still waiting after 10s for clients that take nothing, with closeFlush %s", closeFlush)
	}
}

// TestStoreSlowHello: a hello that comes slowly but steadily is taken, however
// long it takes in all (one deadline for the whole hello cut off a slow link's);
// one that stops coming is dropped once no byte came for the silence allowed.
func TestStoreSlowHello(t *testing.T) {
	old := helloSilence
	t.Cleanup(func() { helloSilence = old }) // after the store's Close (cleanups run last first)
	helloSilence = 300 * time.Millisecond
	_, port := startStore(t, 2, ServerConfig{HeartbeatTimeout: 300 * time.Millisecond})
	b, err := json.Marshal(message{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: 0, World: 2, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	dial := func() net.Conn {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	conn := dial()
	start := time.Now()
	for rest := b; len(rest) > 0; rest = rest[min(len(rest), 10):] {
		if _, err := conn.Write(rest[:min(len(rest), 10)]); err != nil {
			t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if m, err := newMsgReader(conn).read(); err != nil || m.Type != msgOK {
		t.Fatalf("a hello sent over %s: answer %+v, %v; want ok", time.Since(start).Round(time.Millisecond), m, err)
	}

	conn = dial()
	conn.Write(b[:len(b)/2])
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start = time.Now()
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("half a hello, then nothing: %v after %s; want the store to close the connection", err, time.Since(start).Round(time.Millisecond))
	}
}

// TestStoreCloseHelloPending: Close does not wait for a connection that has not
// sent its hello (it waited for the hello's timeout, 10s).
func TestStoreCloseHelloPending(t *testing.T) {
	s, port := startStore(t, 2, ServerConfig{})
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.hellos)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the store did not take the connection within 5s")
		}
	}
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %s with a connection that sent no hello", took.Round(time.Millisecond))
	}
}

// TestStoreExitWord: the word of a launcher on how a rank of its node ended
// (Agent.ReportExit) reaches every launcher (EventExit) where the store's abort
// blamed that rank for a failure a restart can cure ("disconnected"), and only
// there; one that comes before the store noticed fails the generation with it.
func TestStoreExitWord(t *testing.T) {
	srv, port := startStore(t, 2, ServerConfig{})
	sub := srv.Subscribe()
	agent, err := DialAgent(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), AgentOptions{Token: testToken, Node: 1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	next := func(ch <-chan Event, want EventKind) Event {
		t.Helper()
		for {
			select {
			case ev := <-ch:
				if ev.Kind == want {
					return ev
				}
				if ev.Kind != EventStart {
					t.Fatalf("event %+v, want %v", ev, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no %v event", want)
			}
		}
	}
	rawWorker(t, port, 0)
	c1, _ := rawWorker(t, port, 1)
	next(sub, EventStart)
	c1.Close()
	if ev := next(sub, EventAbort); ev.Rank != 1 || !ev.Rerun || ev.Exiting {
		t.Fatalf("abort %+v, want rank 1 blamed, a rerun", ev)
	}
	next(agent.Events(), EventAbort)
	agent.ReportExit(0, 0, "rank 0 on node 1 exited with status 1: not the blamed one", false) // no word for anyone
	const word = "rank 1 on node 1 exited with status 2: panic: out of cheese"
	agent.ReportExit(0, 1, word, false)
	for name, ch := range map[string]<-chan Event{"store's host": sub, "agent": agent.Events()} {
		if ev := next(ch, EventExit); ev.Gen != 0 || ev.Rank != 1 || ev.Reason != word || ev.Rerun {
			t.Errorf("%s: %+v, want rank 1's word, no rerun", name, ev)
		}
	}

	// The next generation: a word before the store noticed the rank gone.
	rawWorker(t, port, 0)
	rawWorker(t, port, 1)
	if ev := next(sub, EventStart); ev.Gen != 1 {
		t.Fatalf("start %+v, want generation 1", ev)
	}
	const own = "rank 0 on node 0 exited with status 3: boom"
	srv.ReportExit(1, 0, own, false)
	if ev := next(sub, EventAbort); ev.Gen != 1 || ev.Rank != 0 || ev.Reason != own || ev.Rerun || !ev.Exiting {
		t.Errorf("abort %+v, want generation 1 failed with rank 0's word, no rerun", ev)
	}
}

// TestAgentFatalBeforeLost: a store that gives up and closes (node 0's launcher
// ending the job) sends its fatal before the connection ends; the agent hands on
// that fatal first, then EventLost. Its relay picked at random between the queued
// fatal and the lost connection, and a launcher of node 1 whose own rank had
// panicked ended with "lost the rendezvous store ... it died" instead.
func TestAgentFatalBeforeLost(t *testing.T) {
	for i := range 20 {
		sc := &storeClient{events: make(chan message, 256), lost: make(chan struct{}), done: make(chan struct{})}
		sc.events <- message{Type: msgFatal, Reason: "node 0: rank 3 on node 1 exited with status 2: panic: boom"}
		sc.lostErr = errors.New("lost the rendezvous store at 127.0.0.1:1 (the launcher of node 0: it died, or its host went away): connection closed")
		close(sc.lost)
		a := &Agent{sc: sc, events: make(chan Event, 256)}
		a.wg.Add(1)
		go a.relay()
		var kinds []EventKind
		for ev := range a.events {
			kinds = append(kinds, ev.Kind)
		}
		if len(kinds) != 2 || kinds[0] != EventFatal || kinds[1] != EventLost {
			t.Fatalf("try %d: events %v, want [fatal lost]", i, kinds)
		}
	}
}

// TestCommAbortBeforeLost: a store that fails the group and then closes (node 0's
// launcher giving up) sends its abort, or its fatal, before the connection ends; the
// rank's communicator fails with that reason, not with "lost the rendezvous store"
// (its monitor picked at random between the queued message and the lost
// connection, so a rank could log "lost the store" for the group's failure, and
// train's "stopped by the launcher: the group failed" read it).
func TestCommAbortBeforeLost(t *testing.T) {
	for _, m := range []message{
		{Type: msgAbort, Gen: 0, Reason: "rank 3 disconnected from the store"},
		{Type: msgFatal, Reason: "node 1: rank 3 on node 1 exited with status 2: panic: boom"},
	} {
		for i := range 20 {
			sc := &storeClient{events: make(chan message, 256), lost: make(chan struct{}), done: make(chan struct{})}
			sc.events <- m
			sc.lostErr = errors.New("lost the rendezvous store at 127.0.0.1:1 (the launcher of node 0: it died, or its host went away): connection closed")
			close(sc.lost)
			c := &Comm{rank: 1, world: 2, store: sc, log: slog.New(slog.DiscardHandler), aborted: make(chan struct{})}
			c.wg.Add(1)
			go c.monitor()
			c.wg.Wait()
			if err := c.Err(); err == nil || !strings.Contains(err.Error(), m.Reason) {
				t.Fatalf("%s, try %d: %v, want %q", m.Type, i, err, m.Reason)
			}
		}
	}
}

// TestStartCarriesRounds: the start of a generation tells the launchers, by rank,
// the restart count each rank's hello gave (Place.RestartCount), by which a
// launcher tells its own round's start from an earlier round's still on its way.
func TestStartCarriesRounds(t *testing.T) {
	srv, port := startStore(t, 2, ServerConfig{})
	sub := srv.Subscribe()
	agent, err := DialAgent(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), AgentOptions{Token: testToken, Node: 1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for rank, round := range []int{2, 3} {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		w := &msgWriter{w: conn}
		if err := w.write(message{Type: msgHello, Version: protocolVersion, Token: testToken, Role: roleWorker, Rank: rank, World: 2, Addr: "127.0.0.1:1", Round: round}); err != nil {
			t.Fatal(err)
		}
	}
	for name, ch := range map[string]<-chan Event{"store's host": sub, "agent": agent.Events()} {
		select {
		case ev := <-ch:
			if ev.Kind != EventStart || !slices.Equal(ev.Rounds, []int{2, 3}) {
				t.Errorf("%s: %+v, want a start with rounds [2 3]", name, ev)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: no start", name)
		}
	}
}
