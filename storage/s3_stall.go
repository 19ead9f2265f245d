package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// A stalled S3 server (stopped, not dead: it holds its connections open and says
// nothing) would otherwise hang a request forever: TCP has no timeout of its own. Every
// connection of the S3 client fails a read or write that moves no byte for the stall
// timeout, as internal/fetch's downloads do; the SDK then retries the request (3 attempts
// in all), and a stream that breaks mid-body is resumed (s3Object.Read), so a stalled
// server costs at most a few stall timeouts before a clear error.

// DefaultStallTimeout is Options.StallTimeout's default.
const DefaultStallTimeout = 60 * time.Second

// EnvStallTimeout overrides DefaultStallTimeout for the commands (a Go duration, "30s").
const EnvStallTimeout = "GPTKIT_S3_STALL_TIMEOUT"

// stallTimeout is the stall timeout opt asks for.
func stallTimeout(opt Options) (time.Duration, error) {
	if opt.StallTimeout > 0 {
		return opt.StallTimeout, nil
	}
	if v := os.Getenv(EnvStallTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			if s, serr := strconv.Atoi(v); serr == nil && s > 0 {
				return time.Duration(s) * time.Second, nil
			}
			return 0, fmt.Errorf("storage: $%s is %q, want a duration such as 60s", EnvStallTimeout, v)
		}
		return d, nil
	}
	return DefaultStallTimeout, nil
}

// stallHTTPClient is the SDK's HTTP client whose connections fail after d without
// progress (connecting included). A server that restarts (MinIO redeployed, a
// gateway's pod replaced behind a Kubernetes service) refuses connections for a few
// seconds, or its name does not resolve ("no such host") or its address answers
// nothing (a connect timeout, no route to host) meanwhile: once the client has
// connected to it, such a dial is tried again until d has passed since the first
// failed one (redialer), each dial given a share of d (dialTimeout: a connect that
// hangs is tried again), rather than failing the upload after the SDK's three quick
// attempts (about a second). Before it has, these fail at once: a wrong endpoint is
// said at once.
func stallHTTPClient(d time.Duration, log *slog.Logger) *awshttp.BuildableClient {
	rd := &redialer{d: d, log: log}
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(dl *net.Dialer) { dl.Timeout = d }).
		WithTransportOptions(func(tr *http.Transport) {
			rd.dial = tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := rd.dialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &stallConn{Conn: c, d: d}, nil
			}
			tr.TLSHandshakeTimeout = d
		})
}

// redialer dials again a server it has reached before that cannot be reached now
// (unreachable): after 100 ms, doubling to 2 s, until it connects or d has passed since
// the first dial of the outage began. Each of those dials (the first included) is given
// dialTimeout(d), not the dialer's d: a connect that hangs (its SYN dropped while a pod
// is replaced) would otherwise take the whole outage's time in one dial, never tried
// again. The first failure of an outage is logged as a warning, the end of it as info.
type redialer struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	d       time.Duration
	log     *slog.Logger
	reached atomic.Bool // a connection succeeded once
	refused atomic.Bool // in an outage (logged)
}

// unreachable reports whether err, from dialing an endpoint reached before, is one of a
// server restarting or being replaced: refused, its name missing from DNS for a while,
// no route to its address, or a connect that timed out.
func unreachable(err error) bool {
	var dns *net.DNSError
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.ETIMEDOUT) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// dialTimeout is the time one dial of an endpoint reached before is given, of the
// stall timeout d: a third of it, at most 10 s, so that a connect that hangs is tried
// again (a few times) before d has passed.
func dialTimeout(d time.Duration) time.Duration {
	return max(min(d/3, 10*time.Second), time.Millisecond)
}

// dialBy dials with at most dialTimeout(r.d), ending by deadline, once the endpoint was
// reached (before, the dialer's own timeout, d: a wrong endpoint is said as it was).
func (r *redialer) dialBy(ctx context.Context, network, addr string, deadline time.Time) (net.Conn, error) {
	if !r.reached.Load() {
		return r.dial(ctx, network, addr)
	}
	if t := time.Now().Add(dialTimeout(r.d)); t.Before(deadline) {
		deadline = t
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return r.dial(dctx, network, addr)
}

func (r *redialer) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	start := time.Now()
	deadline := start.Add(r.d)
	c, err := r.dialBy(ctx, network, addr, deadline)
	if err == nil {
		r.connected(addr)
		return c, nil
	}
	if !r.reached.Load() || !unreachable(err) || ctx.Err() != nil {
		return nil, err
	}
	if r.refused.CompareAndSwap(false, true) {
		r.log.Warn("storage: the S3 endpoint cannot be reached (restarting?): trying again", "addr", addr, "for", r.d.String(), "err", err)
	}
	wait := 100 * time.Millisecond
	for time.Now().Before(deadline) {
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
		c, err = r.dialBy(ctx, network, addr, deadline)
		if err == nil {
			r.connected(addr)
			return c, nil
		}
		if ctx.Err() != nil || !unreachable(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w (unreachable for %s, the stall timeout: $%s)", err, r.d, EnvStallTimeout)
}

func (r *redialer) connected(addr string) {
	r.reached.Store(true)
	if r.refused.CompareAndSwap(true, false) {
		r.log.Info("storage: the S3 endpoint accepts connections again", "addr", addr)
	}
}

// stallConn fails a Read or Write that moves no byte for d. A Write also renews the read
// deadline, so that a request sent on a connection that sat idle in the pool gets a
// whole d for its answer.
type stallConn struct {
	net.Conn
	d time.Duration
}

// stallChunk bounds one write, so that a slow but moving upload renews its deadline.
const stallChunk = 64 << 10

func (c *stallConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.d))
	n, err := c.Conn.Read(p)
	return n, c.stalled(err)
}

func (c *stallConn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		c.Conn.SetDeadline(time.Now().Add(c.d))
		n, err := c.Conn.Write(p[done:min(len(p), done+stallChunk)])
		done += n
		if err != nil {
			return done, c.stalled(err)
		}
	}
	return done, nil
}

func (c *stallConn) stalled(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &stallError{d: c.d, addr: c.RemoteAddr().String()}
	}
	return err
}

// stallError is a connection that moved nothing for d. It is a net.Error whose Timeout
// is true, which the SDK retries.
type stallError struct {
	d    time.Duration
	addr string
}

func (e *stallError) Error() string {
	return fmt.Sprintf("the S3 server at %s sent or took no data for %s (stalled; the limit is $%s or Options.StallTimeout)", e.addr, e.d, EnvStallTimeout)
}
func (e *stallError) Timeout() bool   { return true }
func (e *stallError) Temporary() bool { return true }

var _ net.Error = (*stallError)(nil)
