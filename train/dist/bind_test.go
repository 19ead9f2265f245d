package dist

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"gptkit/internal/freeport"
)

// TestStoreBindsMasterAddr: the store rank 0 hosts listens on --master-addr only: with
// 127.0.0.1 it cannot be reached at another address of the host, here 127.0.0.2 (issue
// 15, item 11: it listened on every interface).
func TestStoreBindsMasterAddr(t *testing.T) {
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Init(ctx, Place{Rank: 0, World: 2, LocalWorld: 1, MasterAddr: "127.0.0.1", MasterPort: port, HostStore: true},
			Options{Token: testToken, Logger: testLogger(t), Timeout: time.Minute})
		done <- err
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store never listened on 127.0.0.1:%d: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)), time.Second); err == nil {
		c.Close()
		t.Fatalf("the store for --master-addr 127.0.0.1 is reachable at 127.0.0.2:%d: it listens on every interface", port)
	}
}

// TestListenFallsBack: a master address that is not this host's (behind a NAT) still
// gets a store, on every interface.
func TestListenFallsBack(t *testing.T) {
	ln, err := Listen("192.0.2.1", 0, testLogger(t)) // TEST-NET-1: never an address of this host
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		t.Errorf("listens on %v, want every interface", ln.Addr())
	}
}

// TestPauseClock: a gap between ticks longer than the threshold is a pause, recent for
// the window after it.
func TestPauseClock(t *testing.T) {
	c := newPauseClock(time.Second)
	t0 := c.last
	if _, p := c.tick(t0.Add(500 * time.Millisecond)); p {
		t.Error("a short gap counted as a pause")
	}
	if d, p := c.tick(t0.Add(5 * time.Second)); !p || d != 4500*time.Millisecond {
		t.Errorf("tick = %v %v, want a 4.5s pause", d, p)
	}
	if d, ok := c.recent(t0.Add(6*time.Second), 2*time.Second); !ok || d != 4500*time.Millisecond {
		t.Errorf("recent = %v %v", d, ok)
	}
	if _, ok := c.recent(t0.Add(8*time.Second), 2*time.Second); ok {
		t.Error("a pause long past is still recent")
	}
}
