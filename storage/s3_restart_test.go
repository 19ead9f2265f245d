package storage

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
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

// TestRedialUnreachable: a server replaced behind a Kubernetes service may, for a few
// seconds, have no DNS name ("no such host"), no route or a connect that times out,
// not only a refusing port: a client that has reached it dials again within the stall
// timeout for each (they failed at once, and the upload after the SDK's three quick
// attempts). One that never reached it fails at once; so does another error.
func TestRedialUnreachable(t *testing.T) {
	ok, _ := net.Pipe()
	for _, c := range []struct {
		name string
		err  error
	}{
		{"no such host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "minio.data.svc", IsNotFound: true}}},
		{"connect timeout", &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutErr{}}},
		{"no route to host", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fails := 0 // dials to fail before one connects
			dials := 0
			rd := &redialer{d: 5 * time.Second, log: slog.New(slog.DiscardHandler), dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials++
				if fails > 0 {
					fails--
					return nil, c.err
				}
				return ok, nil
			}}
			fails = 1
			if _, err := rd.dialContext(ctx, "tcp", "minio.data.svc:9000"); err == nil {
				t.Fatal("a client that never reached its endpoint dialled it again")
			} else if dials != 1 {
				t.Fatalf("%d dials, want 1", dials)
			}
			if _, err := rd.dialContext(ctx, "tcp", "minio.data.svc:9000"); err != nil {
				t.Fatal(err)
			}
			fails, dials = 3, 0
			if _, err := rd.dialContext(ctx, "tcp", "minio.data.svc:9000"); err != nil {
				t.Fatalf("after the endpoint was reached: %v, want it dialled again until it answers", err)
			}
			if dials != 4 {
				t.Fatalf("%d dials, want 4", dials)
			}
		})
	}
	t.Run("other error", func(t *testing.T) {
		dials := 0
		rd := &redialer{d: 5 * time.Second, log: slog.New(slog.DiscardHandler), dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials++
			return nil, errors.New("tls: bad certificate")
		}}
		rd.reached.Store(true)
		if _, err := rd.dialContext(ctx, "tcp", "x:1"); err == nil || dials != 1 {
			t.Fatalf("err %v after %d dials, want it at once", err, dials)
		}
	})
}

// TestRedialHangingConnect: a connect that hangs (its SYN dropped while the pod behind
// the endpoint is replaced), to an endpoint reached before, is given a share of the
// stall timeout and tried again; it was given the dialer's timeout, the whole stall
// timeout, so the first hanging connect used it up and was never tried again.
func TestRedialHangingConnect(t *testing.T) {
	ctx := context.Background()
	const d = 900 * time.Millisecond
	ok, _ := net.Pipe()
	hangs := 0 // dials to hang before one connects
	dials := 0
	rd := &redialer{d: d, log: slog.New(slog.DiscardHandler)}
	rd.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// As net.Dialer with Timeout d (stallHTTPClient's): a hanging connect ends
		// at d or at ctx's deadline.
		dials++
		if hangs == 0 {
			return ok, nil
		}
		hangs--
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutErr{}}
	}
	rd.reached.Store(true)
	hangs = 1
	start := time.Now()
	if _, err := rd.dialContext(ctx, "tcp", "minio.data.svc:9000"); err != nil {
		t.Fatalf("after %s and %d dials: %v, want the hanging connects tried again within %s", time.Since(start), dials, err, d)
	}
	if dials != 2 || time.Since(start) > d {
		t.Fatalf("%d dials in %s, want 2 within %s", dials, time.Since(start), d)
	}
	// A connect that hangs for good fails once d has passed, not later.
	hangs, dials = 1000, 0
	start = time.Now()
	if _, err := rd.dialContext(ctx, "tcp", "minio.data.svc:9000"); err == nil || !strings.Contains(err.Error(), "unreachable for") {
		t.Fatalf("a connect that always hangs: %v", err)
	}
	if took := time.Since(start); took < d || took > d+500*time.Millisecond || dials < 2 {
		t.Fatalf("a connect that always hangs failed after %s and %d dials, want about %s and at least 2", took, dials, d)
	}
	if got := dialTimeout(60 * time.Second); got != 10*time.Second {
		t.Errorf("dialTimeout(60s) = %s, want 10s", got)
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
