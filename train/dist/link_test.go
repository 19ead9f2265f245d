package dist

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestRingLinkLateAccept: a next rank that takes the ring connection only well
// after it was dialled (it got the store's start later, or ran slowly) gets a
// live link: the dialling rank waits for its answer rather than giving up on the
// connection, dialling again, and leaving the next rank holding the dead one.
func TestRingLinkLateAccept(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past the ring hello's timeout")
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // rank 0's ring listener
	if err != nil {
		t.Fatal(err)
	}
	peerLn, err := net.Listen("tcp", "127.0.0.1:0") // rank 1's, played by the test
	if err != nil {
		t.Fatal(err)
	}
	defer peerLn.Close()
	c := &Comm{rank: 0, world: 2, chunk: 1024, log: testLogger(t), aborted: make(chan struct{})}
	addrs := []string{ln.Addr().String(), peerLn.Addr().String()}

	// Rank 1 links to rank 0 at once...
	prev, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer prev.Close()
	writeRingHello(prev, 0, 1, testToken)
	go io.ReadFull(prev, make([]byte, 1))
	// ... and takes rank 0's connection after the hello's timeout.
	got := make(chan error, 1)
	go func() {
		time.Sleep(helloTimeout + time.Second)
		conn, err := peerLn.Accept()
		if err != nil {
			got <- err
			return
		}
		defer conn.Close()
		if _, _, err := readRingHello(conn, testToken); err != nil {
			got <- err
			return
		}
		conn.Write([]byte{'K'})
		var b [4]byte
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadFull(conn, b[:])
		got <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	linked := make(chan error, 1)
	go func() {
		err := c.link(ctx, []net.Listener{ln}, addrs, nil, testToken, false)
		if err == nil {
			err = c.out.send([]byte("ping"))
		}
		linked <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("rank 1 took a dead link from rank 0: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("rank 1 got nothing from rank 0")
	}
	cancel()
	if err := <-linked; err != nil {
		t.Fatal(err)
	}
	c.shutdownLinks()
}
