package dist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ranks of one host move the ring's data through shared memory: the rank that
// dials the next one creates a memfd holding a single-producer single-consumer
// byte ring, passes its descriptor over the Unix socket (SCM_RIGHTS), and both map
// it. A chunk then crosses with one copy into the ring and is added straight out
// of it, with no system call on the data path (a socket costs a copy into the
// kernel and one out of it, plus the calls); a side that finds the ring empty (or
// full) spins briefly, then sleeps on a futex in the shared page, which the other
// side wakes. The Unix socket stays open beside the ring: its end of file is how
// a side learns that the other process died, and closing it (an abort) wakes the
// waits.

// shmRingBytes is the data area of a shared ring: several chunks in flight.
const shmRingBytes = 4 << 20

// shmPublishBytes is how much a sender copies before it publishes, so that the
// receiver works on the front of a chunk while its back is being copied.
const shmPublishBytes = 64 << 10

// The header page of a shared ring; each side's words on their own cache line.
const (
	offHead          = 0   // uint64: bytes written, ever (the sender's)
	offDataSeq       = 8   // uint32: bumped after each publish (futex word)
	offReaderWaiting = 12  // uint32: waiters on the receiving side (sleeping or about to)
	offTail          = 128 // uint64: bytes consumed, ever (the receiver's)
	offSpaceSeq      = 136 // uint32: bumped after each consume (futex word)
	offWriterWaiting = 140 // uint32: waiters on the sending side (sleeping or about to)
	shmHeaderBytes   = 4096
)

// The byte that follows the ring hello on a Unix socket link: the dialing side
// offers a shared ring (with its descriptor) or keeps the socket's stream.
const (
	linkShared = 'M'
	linkStream = 'S'
)

// shmSpins is how many times a side looks at the ring before it sleeps on the
// futex: a microsecond or so. Longer spinning measured no faster here, and on a
// host with no more cores than ranks it takes the core the other side needs.
const shmSpins = 256

// shmSleep bounds each futex sleep, so that a wait notices a closed link even if
// no wake-up comes.
const shmSleep = 50 * time.Millisecond

// shmRing is one side of a shared ring.
type shmRing struct {
	conn   net.Conn // the Unix socket: liveness and shutdown
	mem    []byte   // the whole mapping
	data   []byte   // mem[shmHeaderBytes:]
	broken atomic.Bool
	pos    uint64 // this side's count (head for the sender, tail for the receiver)

	mapMu   sync.Mutex    // guards mem against unmap while a wake-up uses it
	watched chan struct{} // closed when watch returns

	// The sending side: this rank's shared buffers, which the next rank maps.
	ownMu sync.Mutex
	own   []ownRegion
	// The receiving side: the previous rank's shared buffers, mapped here as the
	// watch receives them (index → memory); arrived is closed and replaced on each.
	peerMu  sync.Mutex
	peers   map[uint32][]byte
	arrived chan struct{}
}

// ownRegion is one of this rank's shared buffers.
type ownRegion struct {
	index uint32 // 1, 2, ...: as the next rank knows it
	mem   []byte
}

func (r *shmRing) word64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *shmRing) word32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// newSender sets up the sending side of a link to the next rank: over a Unix
// socket, a shared ring when shared is set (a failure to make one falls back to
// the stream); otherwise the stream.
func newSender(conn net.Conn, shared bool) (sender, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return &streamLink{conn: conn}, nil
	}
	var r *shmRing
	var fd = -1
	if shared {
		var err error
		if r, fd, err = createRing(); err != nil {
			r, fd = nil, -1
		}
	}
	conn.SetDeadline(time.Now().Add(helloTimeout))
	defer conn.SetDeadline(time.Time{})
	if r == nil {
		if _, err := conn.Write([]byte{linkStream}); err != nil {
			return nil, err
		}
		return &streamLink{conn: conn}, nil
	}
	_, _, err := uc.WriteMsgUnix([]byte{linkShared}, unix.UnixRights(fd), nil)
	unix.Close(fd)
	if err != nil {
		r.unmap()
		return nil, err
	}
	r.startWatch(conn)
	return r, nil
}

// newReceiver sets up the receiving side of a link from the previous rank, as
// the previous rank's newSender offers it.
func newReceiver(conn net.Conn) (receiver, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return &streamLink{conn: conn}, nil
	}
	conn.SetDeadline(time.Now().Add(helloTimeout))
	defer conn.SetDeadline(time.Time{})
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := uc.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	switch {
	case n == 1 && b[0] == linkStream && len(fds) == 0:
		return &streamLink{conn: conn}, nil
	case n == 1 && b[0] == linkShared && len(fds) == 1:
		r, err := mapRing(fds[0])
		if err != nil {
			return nil, err
		}
		r.startWatch(conn)
		return r, nil
	}
	return nil, errors.New("the previous rank offered neither a shared ring nor a stream")
}

// createRing makes the shared memory of a ring and maps it.
func createRing() (*shmRing, int, error) {
	fd, err := unix.MemfdCreate("gptkit-ring", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, shmHeaderBytes+shmRingBytes); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("size the shared ring: %w", err)
	}
	r, err := mapRing(fd)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	return r, fd, nil
}

// mapRing maps a ring's memfd (which must have the ring's size).
func mapRing(fd int) (*shmRing, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size != shmHeaderBytes+shmRingBytes {
		return nil, fmt.Errorf("the shared ring has %d bytes, want %d", st.Size, shmHeaderBytes+shmRingBytes)
	}
	mem, err := unix.Mmap(fd, 0, shmHeaderBytes+shmRingBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the shared ring: %w", err)
	}
	return &shmRing{mem: mem, data: mem[shmHeaderBytes:]}, nil
}

// startWatch reads the Unix socket beside the ring: after the setup only the
// sender's region messages come on it (a shared buffer's descriptor, which the
// receiving side maps), so a read fails when the other process dies or the link
// is shut down; then the ring is broken and its waits end.
func (r *shmRing) startWatch(conn net.Conn) {
	r.conn = conn
	r.watched = make(chan struct{})
	r.peers = map[uint32][]byte{}
	r.arrived = make(chan struct{})
	go func() {
		defer close(r.watched)
		defer r.breakRing()
		uc := conn.(*net.UnixConn)
		for {
			index, fd, err := readRegionMessage(uc)
			if err != nil {
				return
			}
			err = r.addPeerRegion(index, fd)
			unix.Close(fd)
			if err != nil {
				return // (the receiving side then waits for it in vain, and fails on the abort)
			}
		}
	}()
}

// A region message: regionMessage, the region's index (uint32), with its memfd
// attached (SCM_RIGHTS).
const (
	regionMessage     = 'R'
	regionMessageSize = 5
)

// readRegionMessage reads one region message from the socket.
func readRegionMessage(uc *net.UnixConn) (index uint32, fd int, err error) {
	var b [regionMessageSize]byte
	oob := make([]byte, unix.CmsgSpace(4))
	fd = -1
	for got := 0; got < len(b); {
		n, oobn, _, _, err := uc.ReadMsgUnix(b[got:], oob)
		if err != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			return 0, -1, err
		}
		got += n
		if oobn > 0 {
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				fds, _ := unix.ParseUnixRights(&m)
				for _, f := range fds {
					if fd < 0 {
						fd = f
					} else {
						unix.Close(f)
					}
				}
			}
		}
	}
	if b[0] != regionMessage || fd < 0 {
		if fd >= 0 {
			unix.Close(fd)
		}
		return 0, -1, errors.New("the previous rank sent something other than a region on the link")
	}
	return binary.LittleEndian.Uint32(b[1:]), fd, nil
}

// addPeerRegion maps the previous rank's shared buffer index from its memfd.
func (r *shmRing) addPeerRegion(index uint32, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Size <= 0 || st.Size%4 != 0 {
		return fmt.Errorf("a shared buffer of %d bytes", st.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	r.peerMu.Lock()
	defer r.peerMu.Unlock()
	if old, dup := r.peers[index]; dup {
		unix.Munmap(old)
	}
	r.peers[index] = mem
	close(r.arrived)
	r.arrived = make(chan struct{})
	return nil
}

// peerRegion returns n floats at off of the previous rank's shared buffer index,
// waiting for its message if it has not come yet.
func (r *shmRing) peerRegion(index uint32, off, n uint64) ([]float32, error) {
	for {
		r.peerMu.Lock()
		mem, ok := r.peers[index]
		arrived := r.arrived
		r.peerMu.Unlock()
		if ok {
			if off > uint64(len(mem)/4) || n > uint64(len(mem)/4)-off {
				return nil, protocolError{fmt.Sprintf("the previous rank refers to floats [%d,%d) of its shared buffer %d of %d floats", off, off+n, index, len(mem)/4)}
			}
			if n == 0 {
				return nil, nil
			}
			return unsafe.Slice((*float32)(unsafe.Pointer(&mem[4*off])), n), nil
		}
		select {
		case <-arrived:
		case <-r.watched:
			return nil, errRingBroken
		}
	}
}

// allocShared returns n floats of shared memory that the next rank maps (its
// descriptor goes over the socket), or nil when that fails.
func (r *shmRing) allocShared(n int) []float32 {
	size := (n*4 + pageSize - 1) / pageSize * pageSize
	fd, err := unix.MemfdCreate("gptkit-buffer", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if unix.Ftruncate(fd, int64(size)) != nil {
		return nil
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	index := uint32(len(r.own) + 1)
	var msg [regionMessageSize]byte
	msg[0] = regionMessage
	binary.LittleEndian.PutUint32(msg[1:], index)
	if _, _, err := r.conn.(*net.UnixConn).WriteMsgUnix(msg[:], unix.UnixRights(fd), nil); err != nil {
		unix.Munmap(mem)
		return nil
	}
	r.own = append(r.own, ownRegion{index: index, mem: mem})
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n)
}

// freeShared unmaps the shared buffer buf starts (allocShared's), if it is one.
func (r *shmRing) freeShared(buf []float32) bool {
	if len(buf) == 0 {
		return false
	}
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	p := uintptr(unsafe.Pointer(&buf[0]))
	for i, o := range r.own {
		if o.mem != nil && p == uintptr(unsafe.Pointer(&o.mem[0])) {
			unix.Munmap(o.mem)
			r.own[i].mem = nil
			return true
		}
	}
	return false
}

// regionOf returns the index of this rank's shared buffer holding all of buf and
// buf's offset in it (in floats), or index 0.
func (r *shmRing) regionOf(buf []float32) (index uint32, off uint64) {
	if len(buf) == 0 {
		return 0, 0
	}
	p, end := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0]))+uintptr(4*len(buf))
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	for _, o := range r.own {
		if o.mem == nil {
			continue
		}
		base := uintptr(unsafe.Pointer(&o.mem[0]))
		if p >= base && end <= base+uintptr(len(o.mem)) {
			return o.index, uint64(p-base) / 4
		}
	}
	return 0, 0
}

var pageSize = unix.Getpagesize()

func (r *shmRing) breakRing() {
	r.broken.Store(true)
	r.mapMu.Lock()
	defer r.mapMu.Unlock()
	if r.mem != nil {
		futexWake(r.word32(offDataSeq))
		futexWake(r.word32(offSpaceSeq))
	}
}

func (r *shmRing) halt() { r.breakRing() }

func (r *shmRing) shutdown() {
	r.conn.Close()
	r.breakRing()
}

// release shuts the link down and unmaps the ring and the previous rank's shared
// buffers: no collective may be using them. (This rank's own shared buffers stay:
// their users may still hold them; freeShared unmaps one.)
func (r *shmRing) release() {
	r.shutdown()
	<-r.watched
	r.unmap()
	r.peerMu.Lock()
	defer r.peerMu.Unlock()
	for k, mem := range r.peers {
		unix.Munmap(mem)
		delete(r.peers, k)
	}
}

func (r *shmRing) unmap() {
	r.mapMu.Lock()
	defer r.mapMu.Unlock()
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem, r.data = nil, nil
	}
}

var errRingBroken = errors.New("the shared-memory link is closed (the other rank's process exited, or this rank aborted)")

func (r *shmRing) send(p []byte) error {
	head, tail := r.word64(offHead), r.word64(offTail)
	for len(p) > 0 {
		var free uint64
		full := func() bool { free = shmRingBytes - (r.pos - atomic.LoadUint64(tail)); return free == 0 }
		if full() {
			if err := r.wait(offSpaceSeq, offWriterWaiting, full); err != nil {
				return err
			}
		}
		at := r.pos % shmRingBytes
		n := min(uint64(len(p)), free, shmRingBytes-at, shmPublishBytes)
		copy(r.data[at:at+n], p[:n])
		r.pos += n
		atomic.StoreUint64(head, r.pos)
		r.signal(offDataSeq, offReaderWaiting)
		p = p[n:]
	}
	return nil
}

// take hands f the next n bytes of the ring (n a multiple of 4), piece by piece
// as they arrive, and frees each piece after f.
func (r *shmRing) take(n int, f func(piece []byte)) error {
	head, tail := r.word64(offHead), r.word64(offTail)
	for n > 0 {
		var avail uint64
		empty := func() bool { avail = atomic.LoadUint64(head) - r.pos; return avail == 0 }
		if empty() {
			if err := r.wait(offDataSeq, offReaderWaiting, empty); err != nil {
				return err
			}
		}
		at := r.pos % shmRingBytes
		k := min(uint64(n), avail, shmRingBytes-at)
		f(r.data[at : at+k])
		r.pos += k
		atomic.StoreUint64(tail, r.pos)
		r.signal(offSpaceSeq, offWriterWaiting)
		n -= int(k)
	}
	return nil
}

func (r *shmRing) recv(p []byte) error {
	return r.take(len(p), func(piece []byte) {
		copy(p, piece)
		p = p[len(piece):]
	})
}

func (r *shmRing) recvAdd(dst []float32, div float32) error {
	return r.take(len(dst)*4, func(piece []byte) {
		in := unsafe.Slice((*float32)(unsafe.Pointer(&piece[0])), len(piece)/4)
		if div != 0 {
			addDiv(dst[:len(in)], in, div)
		} else {
			add(dst[:len(in)], in)
		}
		dst = dst[len(in):]
	})
}

// Direct transfers: when the buffer of a collective is one of the sender's shared
// buffers, the ring carries a token per chunk instead of the chunk, and the
// receiver reads the chunk straight from the sender's memory, which it has mapped
// (one pass over the data instead of a copy into the ring and one out of it). A
// token stays in the ring until the receiver is done with its chunk, so the
// ring's tail tells the sender which chunks it may overwrite.

// sendToken says that chunk k is ready in the sender's shared buffer.
func (r *shmRing) sendToken(k uint64) error {
	var b [tokenBytes]byte
	binary.LittleEndian.PutUint64(b[:], k)
	return r.send(b[:])
}

// position is how many bytes this side has put into (or taken out of) the ring.
func (r *shmRing) position() uint64 { return r.pos }

// waitConsumed waits until the receiver has taken every byte before pos: every
// token (and so every chunk) sent before it.
func (r *shmRing) waitConsumed(pos uint64) error {
	tail := r.word64(offTail)
	blocked := func() bool { return atomic.LoadUint64(tail) < pos }
	if !blocked() {
		return nil
	}
	return r.wait(offSpaceSeq, offWriterWaiting, blocked)
}

// recvDirect takes chunk k's token and applies src, the chunk in the previous
// rank's shared buffer, to dst (copy, add, or add and divide by div), before it
// frees the token.
func (r *shmRing) recvDirect(k uint64, dst, src []float32, mode int, div float32) error {
	var b [tokenBytes]byte
	if err := r.peek(b[:]); err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(b[:]); got != k {
		return protocolError{fmt.Sprintf("the previous rank's chunk token %d, want %d", got, k)}
	}
	switch mode {
	case recvCopy:
		copy(dst, src)
	case recvAddAvg:
		addDiv(dst, src, div)
	default:
		add(dst, src)
	}
	r.pos += tokenBytes
	atomic.StoreUint64(r.word64(offTail), r.pos)
	r.signal(offSpaceSeq, offWriterWaiting)
	return nil
}

// peek fills p with the next len(p) bytes of the ring, waiting for them, without
// taking them.
func (r *shmRing) peek(p []byte) error {
	head := r.word64(offHead)
	var avail uint64
	short := func() bool { avail = atomic.LoadUint64(head) - r.pos; return avail < uint64(len(p)) }
	if short() {
		if err := r.wait(offDataSeq, offReaderWaiting, short); err != nil {
			return err
		}
	}
	at := r.pos % shmRingBytes
	n := copy(p, r.data[at:])
	copy(p[n:], r.data)
	return nil
}

// wait returns once blocked() is false, or when the ring breaks: it spins a
// little, then sleeps on the futex word at seqOff, announcing itself in the word
// at waitingOff (the other side wakes it only then).
//
// It reads whether the link broke before it looks at the ring, and fails only if the
// ring still has nothing after the break: what the other side wrote before it closed
// the link (its last chunk, then exiting) is read, not lost. (Looking at the ring
// first, a wait that was descheduled between the two looks failed with the last
// chunk of a barrier in the ring: seen once in CI, rank 0 exiting at the end of a
// run while rank 1 still waited.)
func (r *shmRing) wait(seqOff, waitingOff int, blocked func() bool) error {
	for range shmSpins {
		broken := r.broken.Load()
		if shmWaitHook != nil {
			shmWaitHook()
		}
		if !blocked() {
			return nil
		}
		if broken {
			return errRingBroken
		}
	}
	seq, waiting := r.word32(seqOff), r.word32(waitingOff)
	// (A count, not a flag: on a direct link two goroutines of the sender may wait
	// for the receiver at once.)
	atomic.AddUint32(waiting, 1)
	defer atomic.AddUint32(waiting, ^uint32(0))
	for {
		s := atomic.LoadUint32(seq)
		broken := r.broken.Load()
		if !blocked() {
			return nil
		}
		if broken {
			return errRingBroken
		}
		futexWait(seq, s, shmSleep)
	}
}

// shmWaitHook, if set (by tests), runs in wait's spinning between its read of the
// link's state and its look at the ring.
var shmWaitHook func()

// signal bumps the futex word at seqOff and wakes the other side if it sleeps.
// (With sequentially consistent atomics, a waiter that announced itself after
// this load saw the new state before sleeping.)
func (r *shmRing) signal(seqOff, waitingOff int) {
	seq := r.word32(seqOff)
	atomic.AddUint32(seq, 1)
	if atomic.LoadUint32(r.word32(waitingOff)) != 0 {
		futexWake(seq)
	}
}

// The futex operations (linux/futex.h), without FUTEX_PRIVATE_FLAG: the words
// are shared between processes.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while *addr == val, at most d (the word is shared between
// processes, so no FUTEX_PRIVATE_FLAG).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every waiter on addr.
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, math.MaxInt32, 0, 0, 0)
}
