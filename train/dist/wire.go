package dist

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The store's messages. A connection starts with the client's hello; the store
// answers ok (or error, and closes). Workers then receive waiting, start, abort
// and fatal; every client sends hb each heartbeat interval and the store answers
// hb.
const (
	msgHello   = "hello"   // client → store: token, role, rank, world, addr, node, round
	msgOK      = "ok"      // store → client: accepted
	msgError   = "error"   // store → client: refused (reason); the store closes
	msgWaiting = "waiting" // store → workers of a gathering generation: missing ranks
	msgStart   = "start"   // store → workers and launchers: the generation runs (addrs, rounds)
	msgAbort   = "abort"   // store → workers and launchers: the generation failed (rank, reason)
	msgFatal   = "fatal"   // store → all: the job failed for good (reason)
	msgHB      = "hb"      // heartbeat, both ways (a worker's carries seq and in)
	msgFail    = "fail"    // worker → store: this rank failed (reason)
	msgLeave   = "leave"   // worker → store: this rank is done
	msgTimeout = "timeout" // worker → store: collective seq has waited past the timeout
	msgGiveUp  = "giveup"  // launcher → store: no restarts left (reason)
	msgStatus  = "status"  // store → worker: send a heartbeat now
	msgSet     = "set"     // worker → store: keep value under key for this generation
	msgGet     = "get"     // worker → store: send the value of key (once it is set)
	msgValue   = "value"   // store → worker: key's value
	msgExit    = "exit"    // launcher → store → launchers: how the rank an abort blamed exited (rank, gen, reason, rerun)
)

// Roles of a store client.
const (
	roleWorker = "worker"
	roleAgent  = "agent"
)

// protocolVersion is the store protocol's version; a hello of another is refused (2:
// an abort's "exiting", which a reader of 1 would refuse as an unknown field; 3: the
// launchers' "exit", which a launcher of 2 would neither send nor wait for, and the
// ranks' rounds in hello and start, by which a launcher tells its own round's start).
const protocolVersion = 3

// maxMessage bounds one store message (a start message carries World addresses).
const maxMessage = 4 << 20

// message is one line of the store protocol.
type message struct {
	Type    string   `json:"type"`
	Version int      `json:"version,omitempty"`
	Token   string   `json:"token,omitempty"`
	Role    string   `json:"role,omitempty"`
	Rank    int      `json:"rank"`
	World   int      `json:"world,omitempty"`
	Node    int      `json:"node,omitempty"`
	Addr    string   `json:"addr,omitempty"`
	Gen     int      `json:"gen"`
	Addrs   []string `json:"addrs,omitempty"`
	Local   string   `json:"local,omitempty"`  // hello: the rank's same-host (Unix socket) ring address
	Locals  []string `json:"locals,omitempty"` // start: every rank's Local
	Round   int      `json:"round,omitempty"`  // hello: the rank's Place.RestartCount
	Rounds  []int    `json:"rounds,omitempty"` // start: every rank's Round (Event.Rounds)
	Missing []int    `json:"missing,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Seq     int64    `json:"seq,omitempty"`
	In      bool     `json:"in,omitempty"`
	Op      string   `json:"op,omitempty"`
	Key     string   `json:"key,omitempty"`
	Value   []byte   `json:"value,omitempty"`
	Exiting bool     `json:"exiting,omitempty"` // abort: Rank reported its own failure and exits (Event.Exiting)
	Rerun   bool     `json:"rerun,omitempty"`   // abort, exit: a restart can cure it (Event.Rerun)
}

// progressReader notes in at (unix nanoseconds) each time some bytes arrive:
// a peer that sends a large message (a Publish's or a Lookup's value, up to
// maxMessage) slowly but steadily is heard from all along, not only at the
// message's end (its heartbeats, or the answers to ours, wait behind it).
type progressReader struct {
	r  io.Reader
	at *atomic.Int64
}

func (r progressReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// msgReader reads newline-delimited messages of at most maxMessage bytes.
type msgReader struct {
	r *bufio.Reader
}

func newMsgReader(r io.Reader) *msgReader { return &msgReader{r: bufio.NewReaderSize(r, 64<<10)} }

var errMessageTooLong = fmt.Errorf("dist: a store message longer than %d bytes", maxMessage)

// read returns the next message. A line that is not a JSON object of the protocol
// is an error: the stream cannot be trusted after it.
func (mr *msgReader) read() (message, error) {
	var line []byte
	for {
		part, err := mr.r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxMessage {
			return message{}, errMessageTooLong
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF && len(line) > 0 {
			return message{}, io.ErrUnexpectedEOF
		}
		return message{}, err
	}
	return parseMessage(line)
}

// parseMessage decodes one line of the protocol.
func parseMessage(line []byte) (message, error) {
	var m message
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return message{}, fmt.Errorf("dist: bad store message %.80q: %w", line, err)
	}
	if dec.More() {
		return message{}, fmt.Errorf("dist: bad store message %.80q: more than one JSON value", line)
	}
	if m.Type == "" {
		return message{}, fmt.Errorf("dist: bad store message %.80q: no type", line)
	}
	return m, nil
}

// msgWriter writes messages; it is safe for concurrent use.
type msgWriter struct {
	mu sync.Mutex
	w  io.Writer
	// timeout, when set (setTimeout), fails a write to a connection whose peer
	// takes none of it for that long (*stalledError): a peer that stopped
	// reading (a stopped or hung process, a host gone without a word) once the
	// sockets' buffers are full. A peer that takes some all along, however
	// slowly, is not failed: a write that went out in part before its deadline
	// goes on with the timeout anew (so a stalled write fails between one and
	// two timeouts after the peer last took some). Nor is a peer blamed for a
	// deadline that passed while this process did not run.
	timeout time.Duration
	// progress, when set, is called each time the peer takes some of a large
	// write (over writeChunk bytes) that has a timeout: a peer that takes a
	// large message slowly is heard from all along (a rank takes a store that
	// reads its Publish for alive, though the answers to its heartbeats wait
	// behind it). Small writes do not count: the sockets' buffers take the
	// heartbeats of a hung peer for a long while.
	progress func()
}

// writeChunk is the most a write with a timeout hands the connection at once,
// so that its progress is seen while a large message goes (a link that takes
// less than this per heartbeat timeout, about 4 KB/s with the default 15s, is
// seen to progress too late: the store is taken as lost during a large Publish).
const writeChunk = 64 << 10

// stalledError is a write the peer took none of for after.
type stalledError struct{ after time.Duration }

func (e *stalledError) Error() string {
	return fmt.Sprintf("the peer took none of the write for %s", readable(e.after))
}

func (e *stalledError) Unwrap() error { return os.ErrDeadlineExceeded }

func (mw *msgWriter) setTimeout(d time.Duration) {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	mw.timeout = d
}

func (mw *msgWriter) write(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	mw.mu.Lock()
	defer mw.mu.Unlock()
	conn, ok := mw.w.(interface{ SetWriteDeadline(time.Time) error })
	if mw.timeout <= 0 || !ok {
		_, err = mw.w.Write(b)
		return err
	}
	large := len(b) > writeChunk
	for len(b) > 0 {
		start := time.Now()
		conn.SetWriteDeadline(start.Add(mw.timeout))
		n, err := mw.w.Write(b[:min(len(b), writeChunk)])
		b = b[n:]
		if n > 0 && large && mw.progress != nil {
			mw.progress()
		}
		switch {
		case err == nil:
			continue
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		case n == 0 && time.Since(start) < mw.timeout*3/2:
			return &stalledError{after: mw.timeout}
		}
		// It took some (slow, not stopped), or the write returned long after
		// its deadline: this process did not run meanwhile (stopped, or its
		// machine suspended), and the peer may have read all along. Either way
		// it has the timeout anew.
	}
	return nil
}
