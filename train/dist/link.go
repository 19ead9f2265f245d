package dist

import (
	"io"
	"net"
)

// sender is the outgoing side of a ring link: what this rank writes to the next.
type sender interface {
	// send writes all of p (a whole number of float32s or a header).
	send(p []byte) error
	// shutdown makes a send under way, and every later one, fail (an abort).
	shutdown()
}

// receiver is the incoming side of a ring link: what this rank reads from the
// previous one.
type receiver interface {
	// recv fills p.
	recv(p []byte) error
	// recvAdd sets dst[i] = in[i] + dst[i] for the next len(dst) floats in, or
	// (in[i] + dst[i]) / div when div != 0.
	recvAdd(dst []float32, div float32) error
	shutdown()
}

// streamLink is a ring link over a byte stream (TCP between hosts, a Unix socket
// between the ranks of a host when shared memory is off): a received chunk lands
// in a scratch buffer and is added from there.
type streamLink struct {
	conn    net.Conn
	scratch []float32
}

func (l *streamLink) send(p []byte) error {
	_, err := l.conn.Write(p)
	return err
}

func (l *streamLink) recv(p []byte) error {
	_, err := io.ReadFull(l.conn, p)
	return err
}

func (l *streamLink) recvAdd(dst []float32, div float32) error {
	if cap(l.scratch) < len(dst) {
		l.scratch = make([]float32, len(dst))
	}
	in := l.scratch[:len(dst)]
	if err := l.recv(floatBytes(in)); err != nil {
		return err
	}
	if div != 0 {
		addDiv(dst, in, div)
	} else {
		add(dst, in)
	}
	return nil
}

func (l *streamLink) shutdown() { l.conn.Close() }
