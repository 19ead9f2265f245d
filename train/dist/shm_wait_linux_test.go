package dist

import (
	"sync/atomic"
	"testing"
)

// TestShmWaitReadsWhatCameBeforeTheBreak: a receiver waiting on an empty ring, while
// the other side writes its last bytes and closes the link (the order of a rank that
// ends a barrier and exits), reads those bytes instead of failing with a broken link.
// Nothing written at all after the break still fails.
func TestShmWaitReadsWhatCameBeforeTheBreak(t *testing.T) {
	mem := make([]byte, shmHeaderBytes+shmRingBytes)
	recv := &shmRing{mem: mem, data: mem[shmHeaderBytes:]}
	last := []byte("lastword")
	once := false
	shmWaitHook = func() {
		if once {
			return
		}
		once = true
		// The sender's last chunk, then its exit: the watch breaks the ring.
		copy(recv.data, last)
		atomic.StoreUint64(recv.word64(offHead), uint64(len(last)))
		recv.broken.Store(true)
	}
	t.Cleanup(func() { shmWaitHook = nil })
	got := make([]byte, len(last))
	if err := recv.recv(got); err != nil || string(got) != string(last) {
		t.Fatalf("recv: %q, %v; want %q", got, err, last)
	}
	if err := recv.recv(got); err != errRingBroken {
		t.Fatalf("recv after the break with nothing more sent: %v, want errRingBroken", err)
	}
}
