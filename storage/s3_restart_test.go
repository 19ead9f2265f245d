package storage

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestS3RestartRedial: an S3 server that restarts (its port refusing connections for
// a while) is waited for, up to the stall timeout, once the client has reached it: the
// request after the restart succeeds (it failed with "connection refused" after the
// SDK's three quick attempts, and a task's upload with it). A server never reached is
// refused at once (a wrong endpoint).
func TestS3RestartRedial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
		go srv.Serve(ln)
		return srv
	}
	srv := serve(ln)
	client := stallHTTPClient(10*time.Second, slog.New(slog.DiscardHandler))
	get := func() error {
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/bkt/key", strings.NewReader("body"))
		req.Close = true // each request dials (as the SDK's retry after a broken connection does)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	srv.Close() // the server goes away: its port refuses connections
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the closed server still accepts connections")
	}
	restarted := make(chan *http.Server, 1)
	go func() {
		time.Sleep(800 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			restarted <- nil
			return
		}
		restarted <- serve(ln)
	}()
	start := time.Now()
	if err := get(); err != nil {
		t.Fatalf("a request while the server restarts: %v, want it to wait for the server", err)
	}
	if s := <-restarted; s != nil {
		defer s.Close()
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Errorf("the request took %v: the server was down for 800 ms", d)
	}

	// A client that never reached its endpoint fails at once.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln2.Addr().String()
	ln2.Close()
	fresh := stallHTTPClient(10*time.Second, slog.New(slog.DiscardHandler))
	start = time.Now()
	req, _ := http.NewRequest(http.MethodGet, "http://"+dead+"/", nil)
	if resp, err := fresh.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a request to a closed port succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a never-reached endpoint took %v to fail, want at once", d)
	}
}
