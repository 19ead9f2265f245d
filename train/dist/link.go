package dist

import (
	"io"
	"net"
	"time"
)

// sender is the outgoing side of a ring link: what this rank writes to the next.
type sender interface {
	// send writes all of p (a whole number of float32s or a header).
	send(p []byte) error
	// shutdown makes a send under way, and every later one, fail (an abort).
	shutdown()
	// halt is shutdown leaving the link open: the next rank notices nothing
	// (until the abort that follows), so that the store hears this rank's
	// account of the failure, not the next rank's of a link that broke after it.
	halt()
}

// receiver is the incoming side of a ring link: what this rank reads from the
// previous one.
type receiver interface {
	// recv fills p.
	recv(p []byte) error
	// recvAdd sets dst[i] = in[i] + dst[i] for the next len(dst) floats in, or
	// (in[i] + dst[i]) / div when div != 0.
	recvAdd(dst []float32, div float32) error
	// shutdown makes a recv under way, and every later one, fail (an abort).
	shutdown()
	// halt is shutdown leaving the link open: the previous rank notices nothing
	// (until the abort that follows), so that the store hears this rank's
	// account of the failure (a send that failed), not the previous rank's.
	halt()
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

// halt stops both directions of the stream: a streamLink is only ever one side
// of a link (sending to the next rank, or receiving from the previous one).
func (l *streamLink) halt() { l.conn.SetDeadline(time.Unix(1, 0)) }

// tokenBytes is a chunk's token on a direct link: the chunk's number in the
// collective.
const tokenBytes = 8

// directSender is a sender that can pass the chunks of this rank's shared
// buffers (Comm.AllocShared) by reference: a token per chunk, which the receiver
// frees once it has read the chunk from this rank's memory.
type directSender interface {
	// regionOf returns the index of the shared buffer holding all of buf and
	// buf's offset in it (in floats), or index 0.
	regionOf(buf []float32) (index uint32, off uint64)
	// sendToken says chunk k of the collective is ready.
	sendToken(k uint64) error
	// position is the count of bytes sent so far.
	position() uint64
	// waitConsumed waits until the receiver has freed everything sent before pos.
	waitConsumed(pos uint64) error
}

// directReceiver is a receiver that can read the previous rank's shared buffers.
type directReceiver interface {
	// peerRegion returns n floats at off of the previous rank's shared buffer index.
	peerRegion(index uint32, off, n uint64) ([]float32, error)
	// recvDirect takes chunk k's token, applies src to dst as mode says, and
	// frees the token.
	recvDirect(k uint64, dst, src []float32, mode int, div float32) error
}
