package dist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// storeClient is one connection to the store: a reader goroutine that keeps the
// store's messages (answering nothing itself), and a heartbeat goroutine that
// sends a heartbeat each interval and declares the store lost when it has heard
// nothing back for the heartbeat timeout.
type storeClient struct {
	conn   net.Conn
	w      *msgWriter
	addr   string // the store's address, for messages
	host   string // who hosts it ("rank 0", "the launcher of node 0"), for messages
	events chan message

	// waiters holds, per key, the Lookups waiting for its value, oldest first:
	// the store answers each get with one value, in order.
	waitMu  sync.Mutex
	waiters map[string][]chan []byte

	lostOnce sync.Once
	lost     chan struct{} // closed when the store is gone or silent
	lostErr  error
	closing  atomic.Bool
	heard    atomic.Int64 // unix nanoseconds of the last bytes from the store (progressReader)
	state    func() (seq int64, in bool)
	paused   atomic.Bool // tests: a hung process sends no heartbeats
	done     chan struct{}
	wg       sync.WaitGroup
	log      *slog.Logger
}

// dialStore connects to the store at addr (retrying until ctx ends: the master may
// start later than this process), says hello and waits for the answer.
func dialStore(ctx context.Context, addr, host string, hello message, log *slog.Logger) (*storeClient, message, error) {
	var conn net.Conn
	var lastErr error
	backoff := 50 * time.Millisecond
	start := time.Now()
	logged := start
	for {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			conn = c
			break
		}
		lastErr = err
		if time.Since(logged) > 10*time.Second {
			log.Info("waiting for the rendezvous store", "addr", addr, "err", err)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, message{}, fmt.Errorf("dist: cannot reach the rendezvous store at %s (%s) after %s: %v\n---> HINT: check MASTER_ADDR/--master-addr and the port, and that the master node's process is running", addr, host, readable(time.Since(start)), lastErr)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
	tuneConn(conn)
	sc := &storeClient{conn: conn, w: &msgWriter{w: conn, timeout: helloTimeout}, addr: addr, host: host, events: make(chan message, 256), waiters: map[string][]chan []byte{},
		lost: make(chan struct{}), done: make(chan struct{}), log: log}
	// A store that takes some of a write (a large Publish, slowly) is heard
	// from: the answers to the heartbeats wait behind it.
	sc.w.progress = func() { sc.heard.Store(time.Now().UnixNano()) }
	hello.Type, hello.Version = msgHello, protocolVersion
	conn.SetDeadline(time.Now().Add(helloTimeout))
	if err := sc.w.write(hello); err != nil {
		conn.Close()
		return nil, message{}, fmt.Errorf("dist: say hello to the rendezvous store at %s: %w", addr, err)
	}
	// Any bytes from the store are hearing from it: a rank reading a large answer
	// slowly (a 4 MB value over a link under 270 KB/s) took the store for silent,
	// and lost, in the middle of it, the answers to its heartbeats behind it.
	mr := newMsgReader(progressReader{r: conn, at: &sc.heard})
	ok, err := mr.read()
	if err != nil {
		conn.Close()
		return nil, message{}, fmt.Errorf("dist: the rendezvous store at %s did not answer the hello: %w", addr, err)
	}
	conn.SetDeadline(time.Time{})
	switch ok.Type {
	case msgOK:
	case msgError:
		conn.Close()
		return nil, message{}, fmt.Errorf("dist: the rendezvous store at %s refused this process: %s", addr, ok.Reason)
	default:
		conn.Close()
		return nil, message{}, fmt.Errorf("dist: the rendezvous store at %s answered %q to the hello", addr, ok.Type)
	}
	sc.heard.Store(time.Now().UnixNano())
	sc.wg.Add(1)
	go sc.read(mr)
	return sc, ok, nil
}

// startHeartbeats sends a heartbeat every interval (with state's collective
// position) and declares the store lost after timeout without a word from it.
// The heartbeats are written by a goroutine of their own: a write that does
// not return (a store that stopped reading, once the sockets' buffers are
// full, or another request's write stuck before it) holds up neither the
// check nor the ticks, and the loss, which closes the connection, ends it.
// (The check came after each heartbeat's write, and waited for it.) A tick
// that finds a heartbeat still waiting to be written sends none.
//
// Every write to the store from then on (heartbeats, Publish, Lookup, the
// leave) has the heartbeat timeout too: one the store takes none of for that
// long loses the store (sc.write), as its silence does.
func (sc *storeClient) startHeartbeats(interval, timeout time.Duration, state func() (int64, bool)) {
	sc.state = state
	sc.w.setTimeout(timeout)
	beats := make(chan message, 1)
	sc.wg.Add(2)
	go func() {
		defer sc.wg.Done()
		for {
			select {
			case <-sc.done:
				return
			case <-sc.lost:
				return
			case m := <-beats:
				if err := sc.write(m); err != nil && !sc.closing.Load() {
					sc.setLost(fmt.Errorf("lost the rendezvous store at %s (%s): %v", sc.addr, sc.host, cutErr(err)))
					return
				}
			}
		}
	}()
	go func() {
		defer sc.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		clock := newPauseClock(max(timeout/2, 3*interval))
		for {
			select {
			case <-sc.done:
				return
			case <-sc.lost:
				return
			case <-tick.C:
			}
			if sc.paused.Load() {
				continue
			}
			if gap, paused := clock.tick(time.Now()); paused {
				// This process was stopped: the store's answers wait unread in the
				// socket; give it a timeout from now rather than blame it.
				sc.log.Warn("dist: this process did not run for a while (stopped, or its machine suspended); the store's silence meanwhile is not held against it", "gap", gap.Round(time.Millisecond))
				sc.heard.Store(time.Now().UnixNano())
			}
			if quiet := time.Since(time.Unix(0, sc.heard.Load())); quiet > timeout {
				sc.setLost(fmt.Errorf("the rendezvous store at %s (%s) has not answered for %s: %s hung or is unreachable", sc.addr, sc.host, readable(quiet), sc.host))
				return
			}
			m := message{Type: msgHB}
			if sc.state != nil {
				m.Seq, m.In = sc.state()
			}
			select {
			case beats <- m:
			default: // one waits already, behind a write that has not returned
			}
		}
	}()
}

func (sc *storeClient) read(mr *msgReader) {
	defer sc.wg.Done()
	for {
		m, err := mr.read()
		if err != nil {
			if !sc.closing.Load() {
				sc.setLost(fmt.Errorf("lost the rendezvous store at %s (%s: it died, or its host went away): %s", sc.addr, sc.host, cutErr(err)))
			}
			return
		}
		sc.heard.Store(time.Now().UnixNano())
		if m.Type == msgHB {
			continue
		}
		if m.Type == msgValue {
			sc.deliver(m)
			continue
		}
		if m.Type == msgStatus {
			hb := message{Type: msgHB}
			if sc.state != nil && !sc.paused.Load() {
				hb.Seq, hb.In = sc.state()
				sc.send(hb)
			}
			continue
		}
		select {
		case sc.events <- m:
		default:
			sc.log.Warn("dist: store events pile up; dropping one", "type", m.Type)
		}
	}
}

// await registers a Lookup of key; the channel receives the value the store sends
// for it. The caller sends the get after await, and calls cancel if it stops waiting.
func (sc *storeClient) await(key string) (ch chan []byte, cancel func()) {
	ch = make(chan []byte, 1)
	sc.waitMu.Lock()
	sc.waiters[key] = append(sc.waiters[key], ch)
	sc.waitMu.Unlock()
	return ch, func() {
		sc.waitMu.Lock()
		defer sc.waitMu.Unlock()
		if i := slices.Index(sc.waiters[key], ch); i >= 0 {
			sc.waiters[key] = slices.Delete(sc.waiters[key], i, i+1)
			if len(sc.waiters[key]) == 0 {
				delete(sc.waiters, key)
			}
		}
	}
}

// deliver hands a value to the oldest Lookup of its key (none: one that gave up).
func (sc *storeClient) deliver(m message) {
	sc.waitMu.Lock()
	defer sc.waitMu.Unlock()
	q := sc.waiters[m.Key]
	if len(q) == 0 {
		return
	}
	q[0] <- m.Value
	if len(q) == 1 {
		delete(sc.waiters, m.Key)
	} else {
		sc.waiters[m.Key] = q[1:]
	}
}

func (sc *storeClient) setLost(err error) {
	sc.lostOnce.Do(func() {
		sc.lostErr = err
		close(sc.lost)
		sc.conn.Close()
	})
}

// write writes m to the store. A write the store took none of for the write
// timeout (*stalledError: it reads nothing) loses the store, naming what was
// being written and how long it waited.
func (sc *storeClient) write(m message) error {
	err := sc.w.write(m)
	var st *stalledError
	if errors.As(err, &st) {
		sc.setLost(fmt.Errorf("the rendezvous store at %s (%s) took none of %s for %s: it reads nothing (%s is stopped or hung, or its host is unreachable)", sc.addr, sc.host, describe(m), readable(st.after), sc.host))
	}
	return err
}

// describe names a message to the store for an error.
func describe(m message) string {
	switch m.Type {
	case msgSet:
		return fmt.Sprintf("the publish of %q", m.Key)
	case msgGet:
		return fmt.Sprintf("the look-up of %q", m.Key)
	case msgHB:
		return "a heartbeat"
	}
	return fmt.Sprintf("a %q message", m.Type)
}

// send writes a message; errors are dropped (a lost store is reported by the
// reader, the heartbeats and write).
func (sc *storeClient) send(m message) {
	if err := sc.write(m); err != nil {
		sc.log.Debug("dist: write to the store", "type", m.Type, "err", err)
	}
}

// writeErr is the error of a request (what names it, "look up \"key\"") whose
// write to the store failed: it names the store, its host, and where to look.
// A write the store took none of (a stalled one) says how long it waited; one
// that failed because the store was lost before says why it was.
func (sc *storeClient) writeErr(what string, err error) error {
	var st *stalledError
	if errors.As(err, &st) {
		return fmt.Errorf("dist: %s: the rendezvous store at %s (%s) took none of it for %s: it reads nothing (%s is stopped or hung, or its host is unreachable), so it is taken as lost\n---> HINT: check that %s's process runs and is not stopped (kill -CONT resumes a stopped one; its log says more), and the network between this host and %s", what, sc.addr, sc.host, readable(st.after), sc.host, sc.host, sc.addr)
	}
	select {
	case <-sc.lost:
		return fmt.Errorf("dist: %s: %w", what, sc.lostErr)
	default:
	}
	return fmt.Errorf("dist: %s: cannot write to the rendezvous store at %s (%s): %w\n---> HINT: %s died or its host went away (its log says more), or this rank's communicator was closed", what, sc.addr, sc.host, err, sc.host)
}

// close ends the connection (after a leave, fail or giveup message).
func (sc *storeClient) close() {
	if sc.closing.Swap(true) {
		return
	}
	close(sc.done)
	sc.conn.Close()
	sc.wg.Wait()
}

// Agent is a launcher's connection to the store of a job hosted elsewhere (by
// node 0's launcher): it receives the store's events and can give the job up.
type Agent struct {
	sc     *storeClient
	events chan Event
	wg     sync.WaitGroup
}

// AgentOptions configures DialAgent.
type AgentOptions struct {
	Token                               string
	Node                                int           // this launcher's node rank
	Timeout                             time.Duration // to reach the store (0: DefaultTimeout)
	HeartbeatInterval, HeartbeatTimeout time.Duration
	Logger                              *slog.Logger
}

// DialAgent connects a launcher to the store at addr.
func DialAgent(ctx context.Context, addr string, o AgentOptions) (*Agent, error) {
	o.defaults()
	log := o.Logger
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	sc, _, err := dialStore(ctx, addr, "the launcher of node 0", message{Token: o.Token, Role: roleAgent, Node: o.Node, Rank: -1}, log)
	if err != nil {
		return nil, err
	}
	sc.startHeartbeats(o.HeartbeatInterval, o.HeartbeatTimeout, nil)
	a := &Agent{sc: sc, events: make(chan Event, 256)}
	a.wg.Add(1)
	go a.relay()
	return a, nil
}

// relay turns the store's messages into Events until the store is lost (EventLost,
// last) or the agent closes.
func (a *Agent) relay() {
	defer a.wg.Done()
	defer close(a.events)
	sc := a.sc
	deliver := func(m message) bool {
		if ev, ok := eventOf(m); ok {
			select {
			case a.events <- ev:
			case <-sc.done:
				return false
			}
		}
		return true
	}
	for {
		select {
		case m := <-sc.events:
			if !deliver(m) {
				return
			}
		case <-sc.lost:
			// What the store said before it went comes first (a select picks
			// among ready cases at random): its fatal, sent as it gave up and
			// closed, says why the job ended; "lost the store" does not.
			for drained := false; !drained; {
				select {
				case m := <-sc.events:
					if !deliver(m) {
						return
					}
				default:
					drained = true
				}
			}
			select {
			case a.events <- Event{Kind: EventLost, Rank: -1, Reason: sc.lostErr.Error()}:
			case <-sc.done:
			}
			return
		case <-sc.done:
			return
		}
	}
}

func (o *AgentOptions) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

func eventOf(m message) (Event, bool) {
	switch m.Type {
	case msgStart:
		return Event{Kind: EventStart, Gen: m.Gen, Rank: -1, Rounds: m.Rounds}, true
	case msgAbort:
		return Event{Kind: EventAbort, Gen: m.Gen, Rank: m.Rank, Reason: m.Reason, Exiting: m.Exiting, Rerun: m.Rerun}, true
	case msgFatal:
		return Event{Kind: EventFatal, Gen: m.Gen, Rank: -1, Reason: m.Reason}, true
	case msgExit:
		return Event{Kind: EventExit, Gen: m.Gen, Rank: m.Rank, Reason: m.Reason, Rerun: m.Rerun}, true
	}
	return Event{}, false
}

// Events are the store's events; the channel closes after EventLost or Close.
func (a *Agent) Events() <-chan Event { return a.events }

// GiveUp tells the store the job cannot go on (this launcher has no restarts
// left): every rank and launcher stops.
func (a *Agent) GiveUp(reason string) { a.sc.send(message{Type: msgGiveUp, Reason: reason}) }

// ReportExit tells the store how rank, of this launcher's node, ended in generation
// gen: reason is its own exit ("rank 3 on node 1 exited with status 2: panic: ..."),
// rerun whether a restart can cure it; an empty reason, that it had not exited
// within the launcher's wait. The other launchers hear it (EventExit) when the
// store's abort blamed that rank for a failure a restart can cure (it
// disconnected): without it they named the store's guess, and a rerun as the next
// step, for a rank's own crash.
func (a *Agent) ReportExit(gen, rank int, reason string, rerun bool) {
	a.sc.send(message{Type: msgExit, Gen: gen, Rank: rank, Reason: reason, Rerun: rerun})
}

// Close disconnects.
func (a *Agent) Close() error {
	a.sc.close()
	a.wg.Wait()
	return nil
}

var errClosed = errors.New("dist: the communicator is closed")
