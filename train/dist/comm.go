package dist

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures Init.
type Options struct {
	// Token is the job token (see Token).
	Token string
	// Timeout bounds the waits of joining: reaching the store, the rendezvous,
	// the ring links (0: DefaultTimeout).
	Timeout time.Duration
	// CollectiveTimeout bounds each collective: one that has not finished within
	// it on this rank is reported to the store, which names the ranks that had
	// not reached it, and the group fails (0: the smaller of Timeout and
	// DefaultCollectiveTimeout).
	CollectiveTimeout time.Duration
	// HeartbeatInterval and HeartbeatTimeout: how often a rank tells the store it
	// lives, and how long a silent rank (or store) is given (0: the defaults).
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// ChunkBytes is the ring's pipelining unit (0: DefaultChunkBytes).
	ChunkBytes int
	// TCPOnly links ranks of the same host over TCP too (by default they use a
	// Unix socket, and a shared-memory ring beside it).
	TCPOnly bool
	// NoSharedMemory keeps the data of same-host links on the Unix socket's
	// stream instead of a shared-memory ring (for comparisons).
	NoSharedMemory bool
	Logger         *slog.Logger
}

// DefaultChunkBytes is the ring's default chunk: large enough for few system
// calls, small enough that the steps overlap on megabyte buffers.
const DefaultChunkBytes = 512 << 10

// failGrace is how long a rank whose ring link broke (or whose collective timed
// out) waits for the store to say which rank failed before reporting it itself.
// Each communicator takes it at Init (Comm.grace); a variable for the tests,
// which wait less.
var failGrace = 3 * time.Second

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CollectiveTimeout <= 0 {
		o.CollectiveTimeout = min(o.Timeout, DefaultCollectiveTimeout)
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Comm is one rank's communicator: the store connection and the ring links. It
// implements train.Collectives. Collectives are serialized: one runs at a time,
// and every rank must call them in the same order with the same lengths (a
// mismatch is detected and fails the group).
//
// A failure anywhere (a rank that dies, hangs or fails, a broken link, a
// collective past the timeout, a cancelled context) aborts the communicator: the
// collective under way and every later one return the error, which names the rank
// at fault. Aborted is closed then, so a command can make sure the process ends.
type Comm struct {
	rank, world int
	gen         int
	next, prev  net.Conn      // the links' connections
	out         sender        // data to the next rank (over next, or shared memory)
	in          receiver      // data from the previous rank
	chunk       int           // floats per chunk
	timeout     time.Duration // each collective's (Options.CollectiveTimeout)
	grace       time.Duration // failGrace, at Init
	store       *storeClient
	server      *Server
	log         *slog.Logger

	mu  sync.Mutex    // one collective at a time
	seq atomic.Int64  // the number of the latest ring collective entered
	ext externalState // collectives run outside the ring (watch.go)

	abortMu  sync.Mutex
	abortErr error
	aborted  chan struct{}
	closed   atomic.Bool
	wg       sync.WaitGroup
}

// Init joins the job as place says: it starts the store when place.HostStore,
// connects to it, waits until every rank has joined and links the ring. With a
// world of one it returns a communicator that talks to nobody.
func Init(ctx context.Context, place Place, o Options) (*Comm, error) {
	o.defaults()
	if err := place.Validate(); err != nil {
		return nil, err
	}
	c := &Comm{rank: place.Rank, world: place.World, chunk: max(o.ChunkBytes/4, 1), timeout: o.CollectiveTimeout, grace: failGrace,
		log: o.Logger, aborted: make(chan struct{})}
	if place.World == 1 {
		return c, nil
	}
	if o.Token == "" {
		return nil, errors.New("dist: no job token (set GPTKIT_JOB_TOKEN)")
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, errors.New("dist: the ring sends float32s as they lie in memory, little-endian; this host is big-endian")
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	storeAddr := net.JoinHostPort(place.MasterAddr, strconv.Itoa(place.MasterPort))
	host := "rank 0"
	if place.StoreHostedByLauncher {
		host = "the launcher of node 0"
	}
	if place.World > place.LocalWorld && place.LocalWorld > 0 {
		if err := CheckMasterAddr(ctx, place.MasterAddr); err != nil {
			return nil, err
		}
	}
	if place.HostStore {
		ln, err := Listen(place.MasterAddr, place.MasterPort, o.Logger)
		if err != nil {
			return nil, err
		}
		c.server, err = NewServer(ln, ServerConfig{Token: o.Token, World: place.World, HeartbeatTimeout: o.HeartbeatTimeout,
			Timeout: o.CollectiveTimeout, Host: host, Logger: o.Logger})
		if err != nil {
			ln.Close()
			return nil, err
		}
	}
	err := c.join(ctx, storeAddr, host, place, o)
	if err != nil {
		if c.store != nil {
			c.store.send(message{Type: msgFail, Reason: err.Error()})
			c.store.close()
		}
		if c.server != nil {
			c.server.Close()
		}
		return nil, err
	}
	return c, nil
}

// join does the rendezvous and links the ring.
func (c *Comm) join(ctx context.Context, storeAddr, host string, place Place, o Options) error {
	// The ring listener goes on the address this host reaches the store from
	// (the route a UDP "connection" picks, which sends nothing): the other ranks
	// reach this one there.
	localIP, err := routeTo(ctx, storeAddr)
	if err != nil {
		return fmt.Errorf("dist: rank %d: find the local address toward the store %s: %w", place.Rank, storeAddr, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(localIP, "0"))
	if err != nil {
		return fmt.Errorf("dist: rank %d: listen for the ring on %s: %w", place.Rank, localIP, err)
	}
	defer ln.Close()
	hello := message{Token: o.Token, Role: roleWorker, Rank: place.Rank, World: place.World, Node: place.NodeRank, Addr: ln.Addr().String(), Round: place.RestartCount}
	var uln net.Listener
	if !o.TCPOnly {
		if uln = listenLocal(); uln != nil {
			defer uln.Close()
			hello.Local = uln.Addr().String()
		}
	}
	sc, ok, err := dialStore(ctx, storeAddr, host, hello, c.log)
	if err != nil {
		return err
	}
	c.store = sc
	c.gen = ok.Gen
	sc.startHeartbeats(o.HeartbeatInterval, o.HeartbeatTimeout, c.position)
	c.log.Info("joined the rendezvous", "rank", place.Rank, "world", place.World, "store", storeAddr, "ring_addr", hello.Addr, "gen", ok.Gen)

	addrs, locals, err := c.awaitStart(ctx, sc, storeAddr, place, o.Timeout)
	if err != nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The start came as the timeout ran out: every rank arrived, but
		// linking cannot begin.
		return fmt.Errorf("dist: every rank arrived at the rendezvous at %s only as the timeout (%s) ran out: no time is left to link the ring (this is rank %d of %d)\n---> HINT: raise the timeout (--dist-timeout): the last rank took about that long to join", storeAddr, o.Timeout, place.Rank, place.World)
	}
	if err := c.link(ctx, []net.Listener{ln, uln}, addrs, locals, o.Token, !o.NoSharedMemory); err != nil {
		return err
	}
	c.wg.Add(1)
	go c.monitor()
	return nil
}

// awaitStart waits until every rank has joined: the store's start message
// gives the ring's addresses (and the generation). A start that has come wins
// over ctx's end, also when both are there at once.
func (c *Comm) awaitStart(ctx context.Context, sc *storeClient, storeAddr string, place Place, timeout time.Duration) (addrs, locals []string, err error) {
	var missing []int
	for {
		var m message
		select {
		case m = <-sc.events:
		case <-sc.lost:
			return nil, nil, fmt.Errorf("dist: rendezvous: %w", sc.lostErr)
		case <-ctx.Done():
			// (select picks at random among what is ready: the start may be
			// waiting beside the deadline.)
			var ok bool
			if m, ok = pendingOutcome(sc.events, &missing); !ok {
				return nil, nil, rendezvousTimeout(storeAddr, timeout, place, missing)
			}
		}
		switch m.Type {
		case msgWaiting:
			missing = m.Missing
		case msgStart:
			if len(m.Addrs) != place.World {
				return nil, nil, fmt.Errorf("dist: the store sent %d ring addresses for a world of %d", len(m.Addrs), place.World)
			}
			c.gen = m.Gen
			return m.Addrs, m.Locals, nil
		case msgAbort, msgFatal:
			return nil, nil, fmt.Errorf("dist: rendezvous: %s", m.Reason)
		}
	}
}

// pendingOutcome takes the store's messages already received, without
// waiting, up to the first that ends the rendezvous (start, abort, fatal),
// which it returns; the waiting messages before it update missing.
func pendingOutcome(events <-chan message, missing *[]int) (message, bool) {
	for {
		select {
		case m := <-events:
			switch m.Type {
			case msgWaiting:
				*missing = m.Missing
			case msgStart, msgAbort, msgFatal:
				return m, true
			}
		default:
			return message{}, false
		}
	}
}

// rendezvousTimeout is the error of a rendezvous that timed out, naming the
// ranks the store last said were missing.
func rendezvousTimeout(storeAddr string, timeout time.Duration, place Place, missing []int) error {
	if len(missing) == 0 {
		return fmt.Errorf("dist: rendezvous at %s timed out after %s (rank %d of %d)", storeAddr, timeout, place.Rank, place.World)
	}
	return fmt.Errorf("dist: rendezvous at %s timed out after %s: %s did not arrive (this is rank %d of %d)\n---> HINT: check that every node started (and with the same --nnodes, --nproc-per-node and GPTKIT_JOB_TOKEN)",
		storeAddr, timeout, ranksText(missing), place.Rank, place.World)
}

// The ring links' hello: magic, version, generation, the dialing rank, the token.
var ringMagic = [8]byte{'G', 'P', 'T', 'K', 'R', 'I', 'N', 'G'}

const ringVersion = 3 // 2: the link-kind byte after the hello on Unix sockets; 3: shared buffers

// link dials the next rank and accepts the previous one. A rank on the same host
// (the same ring IP) is dialled on its Unix socket, when it has one.
func (c *Comm) link(ctx context.Context, lns []net.Listener, addrs, locals []string, token string, shared bool) error {
	prevRank := (c.rank - 1 + c.world) % c.world
	nextRank := (c.rank + 1) % c.world
	type result struct {
		conn net.Conn
		err  error
	}
	accepted := make(chan result, len(lns))
	acceptCtx, stopAccepting := context.WithCancel(ctx)
	var live []net.Listener
	for _, ln := range lns {
		if ln == nil {
			continue
		}
		live = append(live, ln)
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					accepted <- result{err: err}
					return
				}
				conn.SetDeadline(time.Now().Add(helloTimeout))
				gen, from, err := readRingHello(conn, token)
				if err == nil && (from != prevRank || gen != c.gen) {
					err = fmt.Errorf("a ring link from rank %d of generation %d, want rank %d of generation %d", from, gen, prevRank, c.gen)
				}
				if err == nil {
					_, err = conn.Write([]byte{'K'})
				}
				if err != nil {
					c.log.Warn("dist: refused a ring connection", "remote", conn.RemoteAddr(), "err", err)
					conn.Close()
					continue
				}
				conn.SetDeadline(time.Time{})
				accepted <- result{conn: conn}
				return
			}
		}()
	}
	// The listeners close when linking is over (or ctx ends), which ends the
	// accepting goroutines.
	go func() {
		<-acceptCtx.Done()
		for _, ln := range live {
			ln.Close()
		}
	}()
	defer stopAccepting()

	dial := func(network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// The next rank takes the connection only once it links too, which may be
		// well after this rank: its answer is awaited as long as linking may take.
		// (Giving up on it sooner and dialling again could leave the next rank
		// holding the connection given up on: a dead link.) An error here is the
		// next rank refusing the connection, or ctx ending.
		stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
		err = writeRingHello(conn, c.gen, c.rank, token)
		var ack [1]byte
		if err == nil {
			_, err = io.ReadFull(conn, ack[:])
		}
		if err == nil && ack[0] != 'K' {
			err = errors.New("bad acknowledgement")
		}
		if !stop() {
			err = fmt.Errorf("no answer to the ring hello: %w", ctx.Err())
		}
		if err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	local := ""
	if nextRank < len(locals) && locals[nextRank] != "" && sameHost(addrs[nextRank], addrs[c.rank]) {
		local = locals[nextRank]
	}
	var next net.Conn
	var lastErr error
	for next == nil {
		var err error
		if local != "" {
			if next, err = dial("unix", local); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("dist: rank %d cannot link to rank %d at %s (its Unix socket): %v", c.rank, nextRank, local, err)
				}
				c.log.Info("dist: the next rank's Unix socket failed; using TCP", "rank", nextRank, "err", err)
				local = ""
				continue
			}
			break
		}
		if next, err = dial("tcp", addrs[nextRank]); err == nil {
			break
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("dist: rank %d cannot link to rank %d at %s: %v", c.rank, nextRank, addrs[nextRank], lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	var prev result
	for prev.conn == nil {
		select {
		case prev = <-accepted:
		case <-ctx.Done():
			prev.err = ctx.Err()
		}
		if prev.err != nil {
			next.Close()
			if ctx.Err() == nil {
				return fmt.Errorf("dist: rank %d: accept the ring link from rank %d: %v", c.rank, prevRank, prev.err)
			}
			// (The listeners close when ctx ends: their error says nothing.)
			return fmt.Errorf("dist: rank %d (at %s) did not link to rank %d within the timeout: %v\n---> HINT: its process may have died or hung before linking (its log says more), or a firewall drops its connections to this rank's ring address %s", prevRank, addrs[prevRank], c.rank, ctx.Err(), addrs[c.rank])
		}
	}
	for _, conn := range []net.Conn{next, prev.conn} {
		tuneConn(conn)
		if bc, ok := conn.(interface {
			SetReadBuffer(int) error
			SetWriteBuffer(int) error
		}); ok {
			bc.SetReadBuffer(4 << 20)
			bc.SetWriteBuffer(4 << 20)
		}
	}
	c.next, c.prev = next, prev.conn
	// Over a Unix socket the dialing side offers a shared-memory ring; both sides
	// write before they read, so the order cannot deadlock.
	out, err := newSender(next, shared)
	if err == nil {
		c.out = out
		c.in, err = newReceiver(prev.conn)
	}
	if err != nil {
		c.shutdownLinks()
		return fmt.Errorf("dist: rank %d: set up the links to rank %d and from rank %d: %v", c.rank, nextRank, prevRank, err)
	}
	return nil
}

// AllocShared returns n zeroed floats for the buffers of collectives. When the
// next rank is on this host, they are shared memory that it maps: a collective
// on (a part of) such a buffer passes its chunks by reference, and the next rank
// reads them straight from this rank's memory, instead of each chunk being
// copied into the link and out of it. Otherwise (another host, shared memory
// off or failing) they are ordinary memory. The buffer lives until FreeShared or
// the process's end (Close does not unmap it: its user may still hold it). Any
// rank may call it any time; the ranks need not agree.
func (c *Comm) AllocShared(n int) []float32 {
	if a, ok := c.out.(interface{ allocShared(int) []float32 }); ok && n > 0 {
		if buf := a.allocShared(n); buf != nil {
			return buf
		}
		c.log.Warn("no shared memory for a buffer: its collectives copy through the link", "floats", n)
	}
	return make([]float32, n)
}

// FreeShared unmaps a buffer AllocShared returned (no collective may be using
// it); for other memory it does nothing.
func (c *Comm) FreeShared(buf []float32) {
	if f, ok := c.out.(interface{ freeShared([]float32) bool }); ok {
		f.freeShared(buf)
	}
}

// releaseRings unmaps the shared-memory rings once no collective uses them (the
// links are shut down, so one under way returns promptly; if it does not within
// a few seconds, the mappings are left for the process's exit).
func (c *Comm) releaseRings() {
	start := time.Now()
	for !c.mu.TryLock() {
		if time.Since(start) > 5*time.Second {
			return
		}
		time.Sleep(time.Millisecond)
	}
	defer c.mu.Unlock()
	for _, l := range []any{c.out, c.in} {
		if r, ok := l.(interface{ release() }); ok {
			r.release()
		}
	}
}

// shutdownLinks closes the ring links, so that a collective under way returns.
func (c *Comm) shutdownLinks() {
	for _, conn := range []net.Conn{c.next, c.prev} {
		if conn != nil {
			conn.Close()
		}
	}
	if c.out != nil {
		c.out.shutdown()
	}
	if c.in != nil {
		c.in.shutdown()
	}
}

// sameHost reports whether two ring addresses are on the same IP.
func sameHost(a, b string) bool {
	ha, _, err1 := net.SplitHostPort(a)
	hb, _, err2 := net.SplitHostPort(b)
	return err1 == nil && err2 == nil && ha == hb
}

func writeRingHello(w io.Writer, gen, rank int, token string) error {
	b := make([]byte, 0, 24+len(token))
	b = append(b, ringMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, ringVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(gen))
	b = binary.LittleEndian.AppendUint32(b, uint32(rank))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(token)))
	b = append(b, token...)
	_, err := w.Write(b)
	return err
}

// maxToken bounds a token on the wire.
const maxToken = 4096

func readRingHello(r io.Reader, token string) (gen, rank int, err error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, err
	}
	if [8]byte(h[:8]) != ringMagic {
		return 0, 0, errors.New("not a gptkit ring link")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != ringVersion {
		return 0, 0, fmt.Errorf("ring version %d, want %d", v, ringVersion)
	}
	n := binary.LittleEndian.Uint32(h[20:])
	if n > maxToken {
		return 0, 0, errors.New("token too long")
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(r, got); err != nil {
		return 0, 0, err
	}
	if !tokenEqual(string(got), token) {
		return 0, 0, errors.New("wrong job token")
	}
	return int(binary.LittleEndian.Uint32(h[12:])), int(binary.LittleEndian.Uint32(h[16:])), nil
}

// monitor aborts the communicator when the store reports a failure or is lost.
func (c *Comm) monitor() {
	defer c.wg.Done()
	sc := c.store
	handle := func(m message) {
		switch m.Type {
		case msgAbort:
			if m.Gen == c.gen {
				c.abort(fmt.Errorf("dist: %s (seen by rank %d)", m.Reason, c.rank), false)
			}
		case msgFatal:
			c.abort(fmt.Errorf("dist: the job was given up: %s (seen by rank %d)", m.Reason, c.rank), false)
		}
	}
	for {
		select {
		case m := <-sc.events:
			handle(m)
		case <-sc.lost:
			// What the store said before it went comes first (a select picks
			// among ready cases at random): its abort or fatal names the group's
			// failure, which the rank logs and its launcher reads; "lost the
			// rendezvous store" does not.
			for drained := false; !drained; {
				select {
				case m := <-sc.events:
					handle(m)
				default:
					drained = true
				}
			}
			if !c.closed.Load() {
				c.abort(fmt.Errorf("dist: %w (seen by rank %d)", sc.lostErr, c.rank), false)
			}
			return
		case <-sc.done:
			return
		}
	}
}

// abort fails the communicator with err (once): the ring links close, so any
// collective under way returns. With report the store is told, so that every
// other rank stops too.
func (c *Comm) abort(err error, report bool) {
	c.abortMu.Lock()
	if c.abortErr != nil {
		c.abortMu.Unlock()
		return
	}
	c.abortErr = err
	close(c.aborted)
	c.abortMu.Unlock()
	if !c.closed.Load() {
		c.log.Error("communicator aborted", "rank", c.rank, "err", err)
	}
	if report && c.store != nil {
		c.store.send(message{Type: msgFail, Reason: err.Error()})
	}
	c.shutdownLinks()
}

// Err returns the error that aborted the communicator, or nil.
func (c *Comm) Err() error {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	return c.abortErr
}

// Aborted is closed when the communicator fails (not when it is closed after a
// success): a command watching it can make sure the process ends even when the
// failure came in the middle of a long computation.
func (c *Comm) Aborted() <-chan struct{} { return c.aborted }

// Rank implements train.Collectives.
func (c *Comm) Rank() int { return c.rank }

// World implements train.Collectives.
func (c *Comm) World() int { return c.world }

// Publish keeps value under key in the rendezvous store for the ranks of this
// generation (behind the job token, like everything the store holds): how rank
// 0 hands the others what they need to join something else, such as NCCL's
// unique id. A restarted job's new generation starts with no keys.
func (c *Comm) Publish(ctx context.Context, key string, value []byte) error {
	if c.store == nil {
		return fmt.Errorf("dist: publish %q: a world of one has no store", key)
	}
	if err := c.Err(); err != nil {
		return err
	}
	if n := base64.StdEncoding.EncodedLen(len(value)) + len(key) + 256; n > maxMessage {
		// The store would take the message for a broken client's and fail the
		// group, blaming this rank's death.
		return fmt.Errorf("dist: publish %q: a value of %d bytes is over what the store holds (about %d)", key, len(value), base64.StdEncoding.DecodedLen(maxMessage-len(key)-256))
	}
	if err := c.store.write(message{Type: msgSet, Gen: c.gen, Key: key, Value: value}); err != nil {
		return c.store.writeErr(fmt.Sprintf("publish %q", key), err)
	}
	return nil
}

// Lookup waits for the value some rank published under key (Publish), until
// ctx ends or the communicator fails.
func (c *Comm) Lookup(ctx context.Context, key string) ([]byte, error) {
	if c.store == nil {
		return nil, fmt.Errorf("dist: look up %q: a world of one has no store", key)
	}
	value, cancel := c.store.await(key)
	defer cancel()
	if err := c.store.write(message{Type: msgGet, Gen: c.gen, Key: key}); err != nil {
		return nil, c.store.writeErr(fmt.Sprintf("look up %q", key), err)
	}
	select {
	case v := <-value:
		return v, nil
	case <-c.aborted:
		return nil, c.Err()
	case <-c.store.lost:
		return nil, fmt.Errorf("dist: look up %q: %w", key, c.store.lostErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("dist: look up %q in the rendezvous store: %w (did rank 0 publish it?)", key, ctx.Err())
	}
}

// Generation is the store's generation this communicator belongs to (restarts
// make new generations).
func (c *Comm) Generation() int { return c.gen }

// Close leaves the job. A nil failure says this rank finished; otherwise the store
// is told failure, so that the other ranks stop at once. The rank that hosts the
// store waits (a bounded time) for the others to leave before closing it.
func (c *Comm) Close(failure error) error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.store != nil {
		if failure == nil {
			c.store.send(message{Type: msgLeave})
		} else if c.Err() == nil {
			c.store.send(message{Type: msgFail, Reason: failure.Error()})
		}
	}
	c.abortMu.Lock()
	if c.abortErr == nil {
		c.abortErr = errClosed // (Aborted stays open: this is no failure)
	}
	c.abortMu.Unlock()
	c.shutdownLinks()
	if c.store != nil {
		c.store.close()
	}
	c.wg.Wait()
	c.releaseRings()
	if c.server != nil {
		wait := 30 * time.Second
		if failure != nil {
			wait = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		c.server.WaitIdle(ctx)
		cancel()
		c.server.Close()
	}
	return nil
}

// routeTo returns the local IP address the kernel would send packets to addr from.
func routeTo(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "udp", addr)
		if err == nil {
			ip, _, _ := net.SplitHostPort(conn.LocalAddr().String())
			conn.Close()
			return ip, nil
		}
		// A name that does not resolve yet (DNS of a starting cluster) is retried.
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(time.Second):
		}
	}
}
