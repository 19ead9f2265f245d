package cuda

import (
	"fmt"
	"io"
	"slices"

	"gptkit/kernels"
)

// The simulated GPU's streams keep CUDA's ordering rules and check them. Ops
// on one stream run in order; ops on two streams are ordered only by an event
// (cuEventRecord on one, cuStreamWaitEvent on the other) or by the host having
// waited for the first (a stream or event synchronization, an event query that
// found it done, a free). The simulator runs streams lazily (sim_driver.go), so
// the order it happens to run two unordered ops in proves nothing; instead it
// keeps a vector clock per stream, per event and for the host, and checks
// every op when it is queued: an op that touches device memory another
// stream's op writes (or that writes memory another stream's op reads), with
// no ordering between the two, is a hazard, and the call that queued the later
// one fails with an error naming both (SimOptions.NoHazardCheck turns it off).
//
// What an op touches: a copy or memset its ranges; a collective its send
// buffer (read) and receive buffer (written); a cuBLAS call its operands (A, B
// read, C and D written); a kernel the tensors it was given, each taken as
// read and written (the kernels do not say which they only read), and a raw
// device address among its arguments taken to the end of its allocation.
//
// SimOptions.Trace, when set, receives one line per queued op: the stream's
// label ("compute", "comm", or its handle), the op's place on it, the op, and
// the bytes it reads and writes ("compute 12 ncclAllGather r=512 w=1024"), in
// the order the host queued them; the tests read it to see that collectives were queued while the
// backward pass was still being queued.

// memRange is a range of device bytes an op reads, or writes (write).
type memRange struct {
	lo, hi uint64
	write  bool
}

// vclock is a vector clock: for each stream, how many of its ops are known
// to have completed (the host's) or to come before (a stream's, an event's).
type vclock map[stream]uint64

func (c vclock) merge(o vclock) {
	for k, v := range o {
		if v > c[k] {
			c[k] = v
		}
	}
}

func (c vclock) clone() vclock {
	o := make(vclock, len(c))
	for k, v := range c {
		o[k] = v
	}
	return o
}

// simAccess is a queued op in the hazard check's history.
type simAccess struct {
	name   string
	seq    uint64 // its place on its stream (1 = the first op)
	ranges []memRange
}

// hazards is the simulated GPU's ordering state (guarded by simDriver.mu).
type hazards struct {
	off      bool
	host     vclock
	history  map[stream][]simAccess // per stream, by seq, those not yet ordered before everything to come
	labels   map[stream]string
	trace    io.Writer
	declared []memRange // the accesses of the next launch (declareLaunch)
}

func newHazards(o SimOptions) hazards {
	return hazards{off: o.NoHazardCheck, host: vclock{}, history: map[stream][]simAccess{}, labels: map[stream]string{}, trace: o.Trace}
}

// label names a stream in hazards and the trace.
func (d *simDriver) label(s stream, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hz.labels[s] = name
}

func (d *simDriver) streamName(s stream) string {
	if l, ok := d.hz.labels[s]; ok {
		return fmt.Sprintf("the %s stream", l)
	}
	return fmt.Sprintf("stream %#x", s)
}

// admit checks op call (touching acc) about to be queued on st (d.mu held) and,
// when it may go, records it; it returns the op's clock advanced.
func (d *simDriver) admit(call string, s stream, st *simStream, acc []memRange) error {
	if st.vc == nil {
		st.vc = vclock{}
	}
	st.vc.merge(d.hz.host)
	if !d.hz.off && len(acc) > 0 {
		for other, hist := range d.hz.history {
			if other == s {
				continue
			}
			known := st.vc[other]
			for i := len(hist) - 1; i >= 0 && hist[i].seq > known; i-- {
				if err := d.conflict(call, s, acc, other, hist[i]); err != nil {
					return err
				}
			}
		}
	}
	seq := st.sent + 1
	st.vc[s] = seq
	if !d.hz.off && len(acc) > 0 {
		d.hz.history[s] = append(d.hz.history[s], simAccess{name: call, seq: seq, ranges: acc})
	}
	if d.hz.trace != nil {
		l, ok := d.hz.labels[s]
		if !ok {
			l = fmt.Sprintf("%#x", s)
		}
		var r, w uint64
		for _, a := range acc {
			if a.write {
				w += a.hi - a.lo
			} else {
				r += a.hi - a.lo
			}
		}
		fmt.Fprintf(d.hz.trace, "%s %d %s r=%d w=%d\n", l, seq, call, r, w)
	}
	return nil
}

// conflict returns the hazard between op call (acc, on s) and an unordered op
// of another stream, if their ranges meet and one of them writes.
func (d *simDriver) conflict(call string, s stream, acc []memRange, other stream, prev simAccess) error {
	for _, a := range acc {
		for _, b := range prev.ranges {
			if a.lo < b.hi && b.lo < a.hi && (a.write || b.write) {
				lo, hi := max(a.lo, b.lo), min(a.hi, b.hi)
				verb := func(w bool) string {
					if w {
						return "writes"
					}
					return "reads"
				}
				where := ""
				if al := d.dev.Mem.Lookup(lo); al != nil {
					where = fmt.Sprintf(" (bytes %d..%d of the %d-byte %s allocation at %#x)", lo-al.Base, hi-al.Base, len(al.Buf), al.What, al.Base)
				}
				return fmt.Errorf("cuda-sim: stream hazard: %s on %s %s device memory [%#x, %#x)%s that %s on %s %s, with nothing ordering the two (record an event after the one and make the other's stream wait for it: cuEventRecord, cuStreamWaitEvent)",
					call, d.streamName(s), verb(a.write), lo, hi, where, prev.name, d.streamName(other), verb(b.write))
			}
		}
	}
	return nil
}

// hostKnows merges what a completed wait tells the host (d.mu held) and drops
// the history that everything to come is ordered after.
func (d *simDriver) hostKnows(c vclock) {
	d.hz.host.merge(c)
	for s, hist := range d.hz.history {
		done := d.hz.host[s]
		i := 0
		for i < len(hist) && hist[i].seq <= done {
			i++
		}
		if i == len(hist) {
			delete(d.hz.history, s)
		} else if i > 0 {
			d.hz.history[s] = slices.Clone(hist[i:])
		}
	}
}

// streamClock is a copy of st's clock covering all its queued ops (d.mu held).
func streamClock(s stream, st *simStream) vclock {
	c := st.vc.clone()
	c[s] = max(c[s], st.sent)
	return c
}

// declareLaunch gives the next kernel launch's accesses: the tensors among its
// arguments, and raw device addresses to the end of their allocations (called
// by Backend.launch, between enter and leave).
func (d *simDriver) declareLaunch(args []any) {
	if d.hz.off {
		return
	}
	var acc []memRange
	for _, a := range args {
		switch x := a.(type) {
		case kernels.Tensor:
			if x.Bytes() > 0 && x.Addr() != 0 {
				acc = append(acc, memRange{lo: uint64(x.Addr()), hi: uint64(x.Addr()) + uint64(x.Bytes()), write: true})
			}
		case uintptr:
			if al := d.dev.Mem.Lookup(uint64(x)); al != nil {
				acc = append(acc, memRange{lo: uint64(x), hi: al.Base + uint64(len(al.Buf)), write: true})
			}
		}
	}
	d.mu.Lock()
	d.hz.declared = acc
	d.mu.Unlock()
}

// takeDeclared returns and clears declareLaunch's accesses.
func (d *simDriver) takeDeclared() []memRange {
	d.mu.Lock()
	defer d.mu.Unlock()
	acc := d.hz.declared
	d.hz.declared = nil
	return acc
}

// bytesRange is the range of n bytes at p, read or written.
func bytesRange(p devicePtr, n int, write bool) memRange {
	return memRange{lo: uint64(p), hi: uint64(p) + uint64(n), write: write}
}
