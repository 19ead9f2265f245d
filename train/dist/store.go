package dist

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Default timings. The heartbeat timeout bounds how long a hung rank (or a host
// that vanished without closing its connections) goes unnoticed.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultHeartbeatTimeout  = 15 * time.Second
	DefaultTimeout           = 10 * time.Minute
	// DefaultCollectiveTimeout is how long a collective may take on a rank
	// before the group fails, naming the ranks that had not reached it (PyTorch's
	// NCCL watchdog waits 10 minutes).
	DefaultCollectiveTimeout = 5 * time.Minute
	helloTimeout             = 10 * time.Second
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Token is the job token every client must present.
	Token string
	// World is the number of ranks of the job.
	World int
	// HeartbeatTimeout fails a running generation when one of its ranks sends no
	// heartbeat for this long (0: DefaultHeartbeatTimeout).
	HeartbeatTimeout time.Duration
	// Timeout is the collective timeout the ranks use; it only appears in messages.
	Timeout time.Duration
	// Host names the process that hosts the store in messages ("the launcher of node
	// 0", "rank 0"; empty: "the process hosting the store").
	Host   string
	Logger *slog.Logger
}

// EventKind says what an Event reports.
type EventKind int

// The events a launcher acts on.
const (
	EventStart EventKind = iota + 1 // every rank of generation Gen has joined
	EventAbort                      // generation Gen failed: Rank (or -1) and Reason say why
	EventFatal                      // the job failed for good (a launcher gave up)
	EventLost                       // the store is gone or stopped answering (client side)
	// EventExit: the launcher of the rank that an abort of generation Gen blamed for
	// a failure a restart can cure (Rank disconnected, sent no heartbeat) has seen
	// how it ended: Reason is its own exit ("rank 3 on node 1 exited with status 2:
	// panic: ..."), and Rerun whether a restart can cure that (a kill from outside);
	// an empty Reason says that it had not exited within its launcher's wait (hung or
	// stopped): the abort's reason stands.
	EventExit
)

func (k EventKind) String() string {
	switch k {
	case EventStart:
		return "start"
	case EventAbort:
		return "abort"
	case EventFatal:
		return "fatal"
	case EventLost:
		return "lost"
	case EventExit:
		return "exit"
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// Event is what the store tells the launchers.
type Event struct {
	Kind   EventKind
	Gen    int
	Rank   int // the rank at fault (-1: none or unknown)
	Reason string
	// Exiting (EventAbort) says that Rank reported its own failure (Comm.Close) and
	// is exiting with it: its launcher leaves it to exit, as a stop signal would
	// only race its last line, its error, with "interrupted".
	Exiting bool
	// Rerun (EventAbort, EventExit) says that a restart from the newest checkpoint can cure the
	// failure: a rank hung, stopped, disconnected or was restarted, or a collective
	// timed out with every rank still in the job. Not for a rank's own error, nor
	// for a rank that left before a collective the others ran (a program bug).
	Rerun bool
	// Rounds (EventStart) is, by rank, the restart count each rank of the
	// generation was started with (Place.RestartCount, its hello's): a launcher
	// tells its own round's start from an earlier round's still on its way.
	Rounds []int
}

// Server is the rendezvous store: it gathers the ranks of each generation, hands
// them the ring's addresses, watches their heartbeats and tells everyone when a
// generation fails. It is safe for concurrent use.
type Server struct {
	cfg ServerConfig
	ln  net.Listener
	log *slog.Logger

	mu      sync.Mutex
	gen     int
	running bool
	members map[int]*peer // the current generation's workers
	peers   map[*peer]struct{}
	hellos  map[net.Conn]struct{} // connections whose hello has not come yet
	kv      map[string][]byte     // the current generation's published values (Comm.Publish)
	waiters map[string][]*peer    // workers waiting for a key (Comm.Lookup)
	subs    []chan Event
	fatal   string
	// blamed is the generation and rank of the latest abort that blamed a rank for
	// a failure a restart can cure, whose launcher's word on its exit (msgExit) the
	// other launchers wait for (gen -1: none).
	blamed struct{ gen, rank int }
	closed bool
	idle   *sync.Cond
	clock  *pauseClock // the watcher's ticks: was this process itself stopped?

	wg   sync.WaitGroup
	stop chan struct{}
}

type peer struct {
	conn     net.Conn
	w        *msgWriter
	out      chan message  // for the peer's writer (send); closed by Server.Close
	flushed  chan struct{} // closed when the writer ends
	dropped  string        // why the writer gave up on the peer (under Server.mu)
	role     string
	rank     int
	node     int
	addr     string
	local    string
	round    int // its hello's Round
	gen      int
	lastSeen time.Time     // its last heartbeat (or the generation's start)
	heard    *atomic.Int64 // unix nanoseconds of its last bytes (progressReader)
	seq      int64
	in       bool
	left     bool
}

// NewServer serves the store on ln (see Serve) until Close.
func NewServer(ln net.Listener, cfg ServerConfig) (*Server, error) {
	if cfg.World < 1 {
		return nil, fmt.Errorf("dist: store for a world of %d ranks", cfg.World)
	}
	if cfg.Token == "" {
		return nil, errors.New("dist: store without a job token")
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Host == "" {
		cfg.Host = "the process hosting the store"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, ln: ln, log: log, members: map[int]*peer{}, peers: map[*peer]struct{}{}, hellos: map[net.Conn]struct{}{}, stop: make(chan struct{}),
		clock: newPauseClock(cfg.HeartbeatTimeout / 2)}
	s.idle = sync.NewCond(&s.mu)
	s.blamed.gen = -1
	s.wg.Add(2)
	go s.accept()
	go s.watch()
	return s, nil
}

// Listen opens the store's listener on the address the other ranks reach it at,
// host:port (--master-addr, --master-port), and on no other interface: a store for
// 127.0.0.1 is not reachable from the network. An empty host, 0.0.0.0 or :: listens on
// every interface. Where host is no address of this machine (a name that resolves to a
// NAT's or a load balancer's address), the store listens on every interface and log
// says so.
func Listen(host string, port int, log *slog.Logger) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil && errors.Is(err, syscall.EADDRNOTAVAIL) {
		if log != nil {
			log.Warn("dist: the master address is not an address of this host; the rendezvous store listens on every interface", "master_addr", host, "port", port)
		}
		addr = net.JoinHostPort("", strconv.Itoa(port))
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("dist: listen for the rendezvous store on %s: %w\n---> HINT: another job may hold the port; choose another --master-port", addr, err)
	}
	return ln, nil
}

// CheckMasterAddr refuses, for a job on more than one node, a master address that is a
// name this host resolves to loopback addresses only: Debian's and Ubuntu's /etc/hosts
// map the machine's own name to 127.0.1.1, and the store (and the ring addresses of the
// ranks on node 0, found by the route to it) would then be out of the other nodes'
// reach, which they would learn only after --dist-timeout. A loopback literal
// (127.0.0.1, localhost) is the user's own choice and not refused here.
func CheckMasterAddr(ctx context.Context, host string) error {
	if host == "" || host == "localhost" || net.ParseIP(host) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := lookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return nil // not resolvable yet (a starting cluster's DNS): the dial retries
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("dist: the master address %q resolves to %s on this host, a loopback address (/etc/hosts), which the other nodes cannot reach\n---> HINT: pass node 0's network address instead (hostname -I on node 0 lists them), as --master-addr or MASTER_ADDR on every node, or as the hostfile's first host", host, ips[0].IP)
}

// lookupIPAddr resolves a host name (a variable for the tests).
var lookupIPAddr = net.DefaultResolver.LookupIPAddr

// Addr is the address the store listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Subscribe returns a channel of the store's events (for the launcher that hosts
// it). The channel is buffered; it is closed by Close.
func (s *Server) Subscribe() <-chan Event {
	ch := make(chan Event, 256)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
	} else {
		s.subs = append(s.subs, ch)
	}
	return ch
}

// GiveUp fails the job for good: every rank and launcher is told reason.
func (s *Server) GiveUp(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.giveUp(reason)
}

func (s *Server) giveUp(reason string) {
	if s.fatal != "" {
		return
	}
	s.fatal = reason
	s.log.Error("job failed", "reason", reason)
	for p := range s.peers {
		s.send(p, message{Type: msgFatal, Reason: reason, Gen: s.gen})
	}
	s.emit(Event{Kind: EventFatal, Gen: s.gen, Rank: -1, Reason: reason})
}

// WaitIdle waits until no client is connected (every rank and launcher has gone),
// or ctx ends.
func (s *Server) WaitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.peers) > 0 && ctx.Err() == nil {
		s.idle.Wait()
	}
	return ctx.Err()
}

// closeFlush is the most Close waits for its clients to take what was queued for
// them, however steadily they read (a variable for the tests).
var closeFlush = time.Minute

// Close stops the store and closes every connection, once each client has taken
// what was queued for it (at most closeFlush, a minute, in all; a connection whose
// hello has not come is closed at once).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	err := s.ln.Close()
	peers := slices.Collect(mapKeys(s.peers))
	for _, p := range peers {
		close(p.out)
	}
	for c := range s.hellos {
		c.Close() // (waited for up to helloSilence, or longer while a client trickled)
	}
	for _, ch := range s.subs {
		close(ch)
	}
	s.subs = nil
	s.mu.Unlock()
	// The clients get what was queued for them (a GiveUp's fatal, say, queued
	// behind a large value). Each writer goes on while its client takes some
	// within the heartbeat timeout (writeTo drops one that takes none), up to
	// closeFlush in all; one that has written all ends at once. (A second in all
	// cut off a slow client's fatal behind a 4 MB value.) The timer's channel is
	// closed, not ticked once: a tick ended the wait for one client only, and
	// Close waited for each other stuck one until its writer gave up on it.
	flushed, cancel := context.WithTimeout(context.Background(), closeFlush)
	defer cancel()
	for _, p := range peers {
		select {
		case <-p.flushed:
		case <-flushed.Done():
		}
		p.conn.Close()
	}
	s.wg.Wait()
	return err
}

func (s *Server) emit(ev Event) {
	for _, ch := range s.subs {
		select {
		case ch <- ev:
		default:
			s.log.Warn("a store subscriber is not reading its events; one dropped", "event", ev.Kind)
		}
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("store: accept", "err", err)
			return
		}
		s.wg.Add(1)
		go s.serve(conn)
	}
}

// serve handles one client connection: the hello, then its messages until it
// goes.
func (s *Server) serve(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	tuneConn(conn)
	heard := new(atomic.Int64)
	// The hello may take as long as it takes while bytes come: the client is
	// dropped only once none came for helloSilence (or the heartbeat timeout,
	// where longer), as for its other messages. (One deadline for the whole
	// hello, of up to maxMessage bytes, cut off a slow link's.)
	hr := &idleReader{conn: conn, silence: max(helloSilence, s.cfg.HeartbeatTimeout)}
	mr := newMsgReader(progressReader{r: hr, at: heard})
	w := &msgWriter{w: conn}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.hellos[conn] = struct{}{} // Close closes it: no waiting for its hello
	s.mu.Unlock()
	hello, err := mr.read()
	s.mu.Lock()
	delete(s.hellos, conn)
	closed := s.closed
	s.mu.Unlock()
	if err != nil {
		if !closed {
			s.log.Warn("store: a connection sent no hello", "remote", conn.RemoteAddr(), "err", err)
		}
		return
	}
	hr.silence = 0
	conn.SetReadDeadline(time.Time{})
	p, err := s.admit(conn, w, heard, hello)
	if err != nil {
		s.log.Warn("store: refused a connection", "remote", conn.RemoteAddr(), "err", err)
		conn.SetWriteDeadline(time.Now().Add(helloTimeout))
		w.write(message{Type: msgError, Reason: err.Error()})
		return
	}
	// From here on a write to the client fails only once it has taken none of
	// it for the heartbeat timeout (msgWriter.timeout): a slow client that
	// reads all along gets a large answer (a Lookup's value, up to maxMessage)
	// however long it takes.
	w.setTimeout(s.cfg.HeartbeatTimeout)
	done := make(chan struct{})
	defer close(done)
	s.wg.Add(1)
	go s.writeTo(p, done)
	for {
		m, err := mr.read()
		if err != nil {
			s.gone(p, err)
			return
		}
		s.handle(p, m)
	}
}

// helloSilence is the most a client's hello may go without a byte arriving (the
// heartbeat timeout where longer; a variable for the tests).
var helloSilence = helloTimeout

// idleReader reads conn with a deadline silence from each read's start (none once
// silence is 0): a read fails only once no byte came for that long.
type idleReader struct {
	conn    net.Conn
	silence time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.silence > 0 {
		r.conn.SetReadDeadline(time.Now().Add(r.silence))
	}
	return r.conn.Read(p)
}

// sendQueue bounds the messages waiting for one client's writer: a client this far
// behind is not reading them.
const sendQueue = 1024

// send queues m for p; the caller holds s.mu. The store never writes to a client
// while holding s.mu: one that stops reading (a stopped process, a host gone
// without a word) would stall every other client, the heartbeat watcher included.
func (s *Server) send(p *peer, m message) {
	if s.closed {
		return
	}
	select {
	case p.out <- m:
	default:
		if p.dropped == "" {
			p.dropped = fmt.Sprintf("left %d store messages unread", sendQueue)
			p.conn.Close()
		}
	}
}

// writeTo writes p's queued messages until done (or until they are all written
// once Close closed p.out); it drops a client that takes none of them for the
// heartbeat timeout (*stalledError). A client that takes some all along is not
// dropped, however long a message takes it: a deadline for the whole message
// dropped a rank alive but slow (a 4 MB value over a link under 270 KB/s, with
// the default 15s) as if it were gone.
func (s *Server) writeTo(p *peer, done <-chan struct{}) {
	defer s.wg.Done()
	defer close(p.flushed)
	for {
		var m message
		var ok bool
		select {
		case <-done:
			return
		case m, ok = <-p.out:
			if !ok {
				return
			}
		}
		if err := p.w.write(m); err != nil {
			var st *stalledError
			if errors.As(err, &st) {
				s.mu.Lock()
				if p.dropped == "" {
					p.dropped = fmt.Sprintf("took no store message for %s", readable(st.after))
				}
				s.mu.Unlock()
				s.log.Warn("store: dropping a client that does not read its messages", "remote", p.conn.RemoteAddr(), "role", p.role, "rank", p.rank)
			}
			p.conn.Close()
			return
		}
	}
}

// admit checks a hello and registers the peer.
func (s *Server) admit(conn net.Conn, w *msgWriter, heard *atomic.Int64, h message) (*peer, error) {
	if h.Type != msgHello {
		return nil, fmt.Errorf("first message %q, want hello", h.Type)
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.cfg.Token)) != 1 {
		return nil, errors.New("wrong job token: this store belongs to another job (set GPTKIT_JOB_TOKEN to the job's token)")
	}
	if h.Version != protocolVersion {
		return nil, fmt.Errorf("protocol version %d, this store speaks %d (mixed gptkit versions?)", h.Version, protocolVersion)
	}
	p := &peer{conn: conn, w: w, out: make(chan message, sendQueue), flushed: make(chan struct{}), role: h.Role, rank: h.Rank, node: h.Node, addr: h.Addr, local: h.Local, round: h.Round, lastSeen: time.Now(), heard: heard}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the store is closing")
	}
	switch h.Role {
	case roleAgent:
		s.peers[p] = struct{}{}
		s.send(p, message{Type: msgOK, Gen: s.gen})
		if s.fatal != "" {
			s.send(p, message{Type: msgFatal, Reason: s.fatal, Gen: s.gen})
		}
		return p, nil
	case roleWorker:
	default:
		return nil, fmt.Errorf("role %q, want worker or agent", h.Role)
	}
	if h.World != s.cfg.World {
		return nil, fmt.Errorf("rank %d says the world has %d ranks, this job has %d", h.Rank, h.World, s.cfg.World)
	}
	if h.Rank < 0 || h.Rank >= s.cfg.World {
		return nil, fmt.Errorf("rank %d is not in [0,%d)", h.Rank, s.cfg.World)
	}
	if _, _, err := net.SplitHostPort(h.Addr); err != nil {
		return nil, fmt.Errorf("rank %d: bad ring address %q", h.Rank, h.Addr)
	}
	if s.fatal != "" {
		return nil, errors.New(s.fatal)
	}
	if s.running {
		if s.finished() {
			s.log.Info("store: generation done", "gen", s.gen)
			s.gen++
			s.running = false
			s.members = map[int]*peer{}
			s.kv, s.waiters = nil, nil
		} else {
			s.failGen(h.Rank, fmt.Sprintf("rank %d joined again: its previous process is gone (restarted)", h.Rank), false, true)
		}
	}
	if old := s.members[h.Rank]; old != nil {
		// The process of a previous attempt, still connected: the new one replaces it.
		s.log.Warn("store: rank joined twice; dropping the older connection", "rank", h.Rank, "old", old.conn.RemoteAddr())
		old.gen = -1
		old.conn.Close()
	}
	p.gen = s.gen
	s.peers[p] = struct{}{}
	s.members[h.Rank] = p
	s.send(p, message{Type: msgOK, Gen: s.gen})
	s.log.Info("store: rank joined", "rank", h.Rank, "gen", s.gen, "addr", h.Addr, "joined", len(s.members), "world", s.cfg.World)
	if len(s.members) == s.cfg.World {
		s.startGen()
	} else {
		s.tellWaiting()
	}
	return p, nil
}

// finished reports whether every member of the running generation has left.
func (s *Server) finished() bool {
	for _, p := range s.members {
		if !p.left {
			return false
		}
	}
	return true
}

func (s *Server) missing() []int {
	var miss []int
	for r := range s.cfg.World {
		if s.members[r] == nil {
			miss = append(miss, r)
		}
	}
	return miss
}

func (s *Server) tellWaiting() {
	miss := s.missing()
	for _, p := range s.members {
		s.send(p, message{Type: msgWaiting, Gen: s.gen, Missing: miss})
	}
}

func (s *Server) startGen() {
	addrs, locals, rounds := make([]string, s.cfg.World), make([]string, s.cfg.World), make([]int, s.cfg.World)
	now := time.Now()
	for r, p := range s.members {
		addrs[r], locals[r], rounds[r] = p.addr, p.local, p.round
		p.lastSeen = now
	}
	s.running = true
	s.log.Info("store: generation starts", "gen", s.gen, "world", s.cfg.World)
	for p := range s.peers {
		if p.role == roleAgent || s.members[p.rank] == p {
			s.send(p, message{Type: msgStart, Gen: s.gen, Addrs: addrs, Locals: locals, Rounds: rounds})
		}
	}
	s.emit(Event{Kind: EventStart, Gen: s.gen, Rank: -1, Rounds: rounds})
}

// failGen ends the running generation: every member and launcher hears reason.
// exiting says that rank reported its own failure and is exiting (Event.Exiting);
// rerun, that a restart can cure it (Event.Rerun).
func (s *Server) failGen(rank int, reason string, exiting, rerun bool) {
	if !s.running {
		return
	}
	if explained := s.explain(reason); explained != reason {
		reason, rank, exiting, rerun = explained, -1, false, true // no rank's fault
	}
	s.log.Error("store: generation failed", "gen", s.gen, "rank", rank, "reason", reason)
	for p := range s.peers {
		if p.role == roleAgent || (p.gen == s.gen && s.members[p.rank] == p) {
			s.send(p, message{Type: msgAbort, Gen: s.gen, Rank: rank, Reason: reason, Exiting: exiting, Rerun: rerun})
		}
	}
	s.emit(Event{Kind: EventAbort, Gen: s.gen, Rank: rank, Reason: reason, Exiting: exiting, Rerun: rerun})
	if rerun && !exiting && rank >= 0 {
		s.blamed.gen, s.blamed.rank = s.gen, rank
	}
	s.gen++
	s.running = false
	s.members = map[int]*peer{}
	s.kv, s.waiters = nil, nil
}

// member reports whether p is a worker of the current generation.
func (s *Server) member(p *peer) bool {
	return p.role == roleWorker && p.gen == s.gen && s.members[p.rank] == p
}

func (s *Server) handle(p *peer, m message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Type {
	case msgHB:
		p.lastSeen = time.Now()
		p.seq, p.in = m.Seq, m.In
		s.send(p, message{Type: msgHB})
	case msgLeave:
		p.left = true
	case msgFail:
		if !s.member(p) {
			return
		}
		if s.running {
			s.failGen(p.rank, fmt.Sprintf("rank %d failed: %s", p.rank, m.Reason), true, false)
		} else {
			delete(s.members, p.rank)
			s.tellWaiting()
		}
	case msgTimeout:
		if s.member(p) && s.running {
			s.probeLaggards(p, m)
		}
	case msgGiveUp:
		if p.role == roleAgent {
			s.giveUp(m.Reason)
		}
	case msgExit:
		if p.role == roleAgent {
			s.exited(m.Gen, m.Rank, m.Reason, m.Rerun)
		}
	case msgSet:
		if !s.member(p) {
			return
		}
		if s.kv == nil {
			s.kv = map[string][]byte{}
		}
		s.kv[m.Key] = m.Value
		for _, q := range s.waiters[m.Key] {
			s.send(q, message{Type: msgValue, Gen: s.gen, Key: m.Key, Value: m.Value})
		}
		delete(s.waiters, m.Key)
	case msgGet:
		if !s.member(p) {
			return
		}
		if v, ok := s.kv[m.Key]; ok {
			s.send(p, message{Type: msgValue, Gen: s.gen, Key: m.Key, Value: v})
			return
		}
		if s.waiters == nil {
			s.waiters = map[string][]*peer{}
		}
		s.waiters[m.Key] = append(s.waiters[m.Key], p)
	default:
		s.log.Warn("store: unexpected message", "type", m.Type, "remote", p.conn.RemoteAddr())
	}
}

// ReportExit is Agent.ReportExit for the launcher hosting the store.
func (s *Server) ReportExit(gen, rank int, reason string, rerun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited(gen, rank, reason, rerun)
}

// exited handles a launcher's word on how a rank of its node ended (reason; empty:
// it had not exited within the launcher's wait). Where the latest abort blamed that
// rank for a failure a restart can cure ("disconnected"), every launcher hears it
// (EventExit): the rank's own end (a panic) is what to say, not the store's guess.
// Where the store has not noticed yet, the generation fails with it. The caller
// holds s.mu.
func (s *Server) exited(gen, rank int, reason string, rerun bool) {
	switch {
	case s.running && gen == s.gen && reason != "" && s.members[rank] != nil && !s.members[rank].left:
		s.failGen(rank, reason, true, rerun) // its launcher saw it exit: no stop signal for it
	case gen >= 0 && gen == s.blamed.gen && rank == s.blamed.rank:
		s.log.Info("store: the blamed rank's launcher says how it ended", "gen", gen, "rank", rank, "reason", reason, "rerun", rerun)
		for p := range s.peers {
			if p.role == roleAgent {
				s.send(p, message{Type: msgExit, Gen: gen, Rank: rank, Reason: reason, Rerun: rerun})
			}
		}
		s.emit(Event{Kind: EventExit, Gen: gen, Rank: rank, Reason: reason, Rerun: rerun})
	}
}

// probeLaggards asks every rank of the generation for a heartbeat now, and once
// they have answered (or after a second) fails the generation naming the ranks
// that had not reached the collective rank p timed out in.
func (s *Server) probeLaggards(p *peer, m message) {
	gen, asked := s.gen, time.Now()
	for _, q := range s.members {
		s.send(q, message{Type: msgStatus})
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		deadline := time.Now().Add(time.Second)
		for {
			s.mu.Lock()
			if s.gen != gen || !s.running {
				s.mu.Unlock()
				return
			}
			answered := true
			for _, q := range s.members {
				answered = answered && (q.left || q.lastSeen.After(asked))
			}
			if answered || time.Now().After(deadline) {
				reason, rerun := s.laggards(p, m)
				s.failGen(-1, reason, false, rerun)
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
}

// laggards names the ranks that had not reached the collective a rank timed out
// in: a rank's heartbeat position is the latest collective it has begun, and
// whether it has reached it (is in it or has finished it), so a rank that has
// finished the collective is not among them. Ranks that have left the job (they
// finished their run) are named as such, not as alive but stuck.
func (s *Server) laggards(p *peer, m message) (reason string, rerun bool) {
	var behind, left []int
	for r, q := range s.members {
		switch {
		case q.left:
			left = append(left, r)
		case q.seq < m.Seq || (q.seq == m.Seq && !q.in):
			behind = append(behind, r)
		}
	}
	slices.Sort(behind)
	slices.Sort(left)
	var why []string
	if len(behind) > 0 {
		why = append(why, fmt.Sprintf("%s did not arrive at collective #%d (%s) within %s: alive (heartbeats) but stuck before it", ranksText(behind), m.Seq, m.Op, m.Reason))
	}
	if len(left) > 0 {
		why = append(why, fmt.Sprintf("%s finished and left the job before collective #%d (%s), which the others waited in for %s: every rank must run the same collectives (the same steps, evaluations and checkpoints)", ranksText(left), m.Seq, m.Op, m.Reason))
	}
	if len(why) == 0 {
		return fmt.Sprintf("collective #%d (%s) did not finish within %s on rank %d, though every rank has reached it: the links between the ranks are stuck (network? with NCCL, NCCL_DEBUG=INFO says more)", m.Seq, m.Op, m.Reason, p.rank), true
	}
	return strings.Join(why, "; "), len(left) == 0
}

// gone handles a closed connection.
func (s *Server) gone(p *peer, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.peers, p)
	if len(s.peers) == 0 {
		s.idle.Broadcast()
	}
	if s.closed || !s.member(p) {
		return
	}
	if s.running {
		switch {
		case p.left:
		case p.dropped != "":
			s.failGen(p.rank, fmt.Sprintf("rank %d %s, and the store dropped it: its process is stopped or hung, or its host is unreachable", p.rank, p.dropped), false, true)
		default:
			s.failGen(p.rank, fmt.Sprintf("rank %d disconnected from the store (%s): its process died or its host went away", p.rank, cutErr(err)), false, true)
		}
		return
	}
	delete(s.members, p.rank)
	s.tellWaiting()
}

// noticePause checks whether this process was itself stopped since the watcher's last
// tick; if so the ranks' heartbeat times are reset (they could not be read meanwhile).
// The caller holds s.mu.
func (s *Server) noticePause(now time.Time) {
	gap, paused := s.clock.tick(now)
	if !paused {
		return
	}
	s.log.Warn("store: this process did not run for a while (stopped, or its machine suspended); the ranks' heartbeats are not held against them", "gap", gap.Round(time.Millisecond))
	for _, p := range s.members {
		p.lastSeen = now
	}
}

// explain prefixes reason with the cause when this process was stopped just before
// (the ranks then lose the store and leave, which is not their fault). The caller
// holds s.mu.
func (s *Server) explain(reason string) string {
	now := time.Now()
	s.noticePause(now)
	d, ok := s.clock.recent(now, 2*s.cfg.HeartbeatTimeout)
	if !ok || strings.Contains(reason, "did not run for") {
		return reason
	}
	return pauseNote(s.cfg.Host, d) + "; then: " + reason
}

// Explain is explain for a launcher hosting the store: a failure it saw itself (a rank
// that exited) right after the launcher was stopped is put down to the stop.
func (s *Server) Explain(reason string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.explain(reason)
}

// watch fails a running generation whose rank misses its heartbeats.
func (s *Server) watch() {
	defer s.wg.Done()
	tick := time.NewTicker(min(s.cfg.HeartbeatTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		s.noticePause(time.Now())
		if s.running {
			for _, r := range slices.Sorted(mapKeys(s.members)) {
				p := s.members[r]
				if quiet := p.quiet(); !p.left && quiet > s.cfg.HeartbeatTimeout {
					s.failGen(r, fmt.Sprintf("rank %d sent no heartbeat for %s (hung, stopped, or its host is unreachable)", r, readable(quiet)), false, true)
					break
				}
			}
		}
		s.mu.Unlock()
	}
}

// quiet is how long p has sent nothing: no heartbeat, and no byte of another
// message (a large Publish a slow link takes long over, its heartbeats waiting
// behind it). The caller holds s.mu.
func (p *peer) quiet() time.Duration {
	last := p.lastSeen
	if h := time.Unix(0, p.heard.Load()); h.After(last) {
		last = h
	}
	return time.Since(last)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ranksText is "rank 3" or "ranks 1, 2".
func ranksText(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	if len(ranks) == 1 {
		return "rank " + s[0]
	}
	return "ranks " + strings.Join(s, ", ")
}

// readable rounds a duration for a message: to the second from a second up
// ("15s", "2m30s", as before), to the millisecond below it ("250ms"), so that
// a sub-second timeout does not read "0s".
func readable(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Second)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// cutErr shortens a network error for a message.
func cutErr(err error) string {
	if errors.Is(err, io.EOF) {
		return "connection closed"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "read tcp") {
		return msg[i+2:]
	}
	return msg
}

// tuneConn sets what every gptkit TCP connection wants: no Nagle delay and
// keep-alives (a peer that vanishes without closing is noticed by heartbeats
// sooner; keep-alives only clean up).
func tuneConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(15 * time.Second)
	}
}
