package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// Config describes a simulated GPU.
type Config struct {
	// Seed drives every random choice: the order of blocks, the order warps run
	// in between barriers, the order of a warp's atomics, and the errors of the
	// approximate math instructions. Runs with one seed are repeatable.
	Seed uint64
	// MemoryBytes is the device memory size (default 16 GiB): allocations past it
	// fail with ErrOutOfMemory.
	MemoryBytes uint64
	// SMs is the number of multiprocessors reported (%nsmid; default 8).
	SMs int
	// ExactApprox makes the .approx instructions return the correctly rounded
	// result instead of one perturbed within the PTX ISA's error bound.
	ExactApprox bool
}

// Device is one simulated GPU: its memory and the kernels loaded on it. A
// Device runs one launch at a time (its caller, the driver's stream, orders
// them).
type Device struct {
	cfg      Config
	Mem      *Memory
	launches atomic.Uint64
}

// NewDevice returns a simulated GPU.
func NewDevice(cfg Config) *Device {
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = 16 << 30
	}
	if cfg.SMs <= 0 {
		cfg.SMs = 8
	}
	return &Device{cfg: cfg, Mem: newMemory(cfg.MemoryBytes)}
}

// Config returns the device's configuration.
func (d *Device) Config() Config { return d.cfg }

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) count() int { return d.X * d.Y * d.Z }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// LaunchConfig is one kernel launch.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedBytes int      // dynamic shared memory
	Args        []uint64 // one value per kernel parameter (scalars and pointers)
}

// Kernel is a kernel of a loaded module.
type Kernel struct {
	dev        *Device
	prog       *program
	maxDynSmem int
	mu         sync.Mutex // one launch at a time (they share spare)
	spare      []*warp    // warps (register files) kept from the last launch
}

// Name is the kernel's name.
func (k *Kernel) Name() string { return k.prog.name }

// NumParams is the number of parameters the kernel takes.
func (k *Kernel) NumParams() int { return len(k.prog.params) }

// StaticShared is the bytes of .shared memory the kernel declares.
func (k *Kernel) StaticShared() int { return k.prog.shared }

// MaxDynamicShared is the most dynamic shared memory a launch may ask for.
func (k *Kernel) MaxDynamicShared() int { return k.maxDynSmem }

// SetMaxDynamicShared raises the dynamic shared memory limit, as
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) does (up
// to sm_80's 163 KiB per block, static included).
func (k *Kernel) SetMaxDynamicShared(n int) error {
	if n < 0 || n+k.prog.shared > maxSharedOptIn {
		return fmt.Errorf("sim: kernel %s: %d bytes of dynamic shared memory (+%d static) exceed sm_80's %d per block", k.prog.name, n, k.prog.shared, maxSharedOptIn)
	}
	k.maxDynSmem = n
	return nil
}

const (
	maxSharedDefault = 48 << 10  // without the attribute
	maxSharedOptIn   = 163 << 10 // sm_80 with it
	maxThreads       = 1024
)

// Fault is an error a kernel made while running: a bad memory access, an
// uninitialized shared-memory read, a barrier or warp-synchronous instruction
// reached by only part of the threads that must reach it, a trap. It names the
// kernel, the PTX line, the block and (where one thread is at fault) the thread
// and address.
type Fault struct {
	Kernel    string
	Module    string
	Line      int
	Op        string
	Block     [3]int
	Thread    [3]int
	HasThread bool
	Addr      uint64
	HasAddr   bool
	Msg       string
}

func (f *Fault) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: kernel %s (%s:%d: %s): block (%d,%d,%d)", f.Kernel, f.Module, f.Line, f.Op, f.Block[0], f.Block[1], f.Block[2])
	if f.HasThread {
		fmt.Fprintf(&b, ", thread (%d,%d,%d)", f.Thread[0], f.Thread[1], f.Thread[2])
	}
	if f.HasAddr {
		fmt.Fprintf(&b, ", address %#x", f.Addr)
	}
	b.WriteString(": ")
	b.WriteString(f.Msg)
	return b.String()
}

// ErrLaunch is wrapped by launch configuration errors (bad dimensions,
// arguments or shared memory size), which a real driver refuses before running.
var ErrLaunch = errors.New("invalid launch")

// Check validates a launch configuration as cuLaunchKernel does before
// queueing the launch: dimensions, the argument count, shared memory.
func (k *Kernel) Check(cfg LaunchConfig) error {
	p := k.prog
	g, bl := cfg.Grid, cfg.Block
	switch {
	case bl.X < 1 || bl.Y < 1 || bl.Z < 1 || bl.Z > 64 || bl.X > 1024 || bl.Y > 1024:
		return fmt.Errorf("sim: kernel %s: %w: block %v", p.name, ErrLaunch, bl)
	case bl.count() > maxThreads:
		return fmt.Errorf("sim: kernel %s: %w: block %v has %d threads, at most %d", p.name, ErrLaunch, bl, bl.count(), maxThreads)
	case p.maxThreads > 0 && bl.count() > p.maxThreads:
		return fmt.Errorf("sim: kernel %s: %w: block %v has more threads than its .maxntid (%d)", p.name, ErrLaunch, bl, p.maxThreads)
	case g.X < 1 || g.Y < 1 || g.Z < 1 || g.Y > 65535 || g.Z > 65535 || g.X > math.MaxInt32:
		return fmt.Errorf("sim: kernel %s: %w: grid %v", p.name, ErrLaunch, g)
	case len(cfg.Args) != len(p.params):
		return fmt.Errorf("sim: kernel %s: %w: %d arguments for %d parameters", p.name, ErrLaunch, len(cfg.Args), len(p.params))
	case cfg.SharedBytes < 0 || cfg.SharedBytes > max(k.maxDynSmem, 0):
		return fmt.Errorf("sim: kernel %s: %w: %d bytes of dynamic shared memory, at most %d (raise it with the max-dynamic-shared attribute)", p.name, ErrLaunch, cfg.SharedBytes, k.maxDynSmem)
	}
	if p.reqNTID != nil {
		want := Dim3{p.reqNTID[0], 1, 1}
		if len(p.reqNTID) > 1 {
			want.Y = p.reqNTID[1]
		}
		if len(p.reqNTID) > 2 {
			want.Z = p.reqNTID[2]
		}
		if want != bl {
			return fmt.Errorf("sim: kernel %s: %w: block %v, its .reqntid is %v", p.name, ErrLaunch, bl, want)
		}
	}
	return nil
}

// Launch runs the kernel to completion. A fault stops it and is returned as a
// *Fault; the memory the kernel wrote before the fault stays written.
func (k *Kernel) Launch(cfg LaunchConfig) (err error) {
	if err := k.Check(cfg); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.prog
	g, bl := cfg.Grid, cfg.Block
	n := k.dev.launches.Add(1)
	l := &launch{dev: k.dev, k: k, prog: p, grid: g, block: bl, dynSmem: cfg.SharedBytes,
		rng: rand.New(rand.NewPCG(k.dev.cfg.Seed, n)), seed: k.dev.cfg.Seed ^ n*0x9e3779b97f4a7c15}
	l.params = make([]byte, p.paramSize)
	for i, a := range p.params {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], cfg.Args[i])
		copy(l.params[a.offset:a.offset+a.size], buf[:a.size])
	}
	l.mem = k.dev.Mem
	l.mem.mu.RLock()
	defer l.mem.mu.RUnlock()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*Fault)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	l.run()
	return nil
}

// launch is the state of one kernel launch.
type launch struct {
	dev     *Device
	k       *Kernel
	prog    *program
	mem     *Memory
	grid    Dim3
	block   Dim3
	dynSmem int
	params  []byte
	rng     *rand.Rand
	seed    uint64
	warps   []*warp
	blk     block
}

// block is the state of the block running.
type block struct {
	ctaid  [3]int
	shared []byte
	shinit []byte // per byte of shared: 0 unwritten since launch, 1 written, 2 cp.async pending
	nthr   int
}

func (l *launch) run() {
	p := l.prog
	nthr := l.block.count()
	nw := (nthr + 31) / 32
	l.blk.nthr = nthr
	smem := alignUp(p.shared, max(p.sharedAl, 1)) + l.dynSmem
	l.blk.shared = make([]byte, smem)
	l.blk.shinit = make([]byte, smem)
	for i := 0; i < nw; i++ {
		var w *warp
		if i < len(l.k.spare) { // the register files of the kernel's last launch
			w = l.k.spare[i]
			*w = warp{r: w.r, p: w.p, local: w.local, async: w.async}
		} else {
			w = &warp{r: make([][32]uint64, p.nslots), p: make([]uint32, p.npreds)}
			if p.localSize > 0 {
				w.local = make([]byte, 32*p.localSize)
			}
			w.initSlots(p)
		}
		w.l, w.prog, w.id = l, p, i
		lanes := min(32, nthr-32*i)
		w.exists = uint32(mask(uint(lanes)))
		w.fillSpecials(true)
		l.warps = append(l.warps, w)
	}
	if len(l.warps) > len(l.k.spare) {
		l.k.spare = l.warps
	}
	nb := l.grid.count()
	order := l.blockOrder(nb)
	for _, bi := range order {
		b := &l.blk
		b.ctaid = [3]int{bi % l.grid.X, bi / l.grid.X % l.grid.Y, bi / (l.grid.X * l.grid.Y)}
		clear(b.shared)
		clear(b.shinit)
		l.runBlock()
	}
}

// blockOrder is a seeded permutation of the blocks (a prefix shuffle for huge
// grids keeps it cheap: the first blocks run in a random order).
func (l *launch) blockOrder(nb int) []int {
	order := make([]int, nb)
	for i := range order {
		order[i] = i
	}
	l.rng.Shuffle(nb, func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

func (l *launch) runBlock() {
	ws := l.warps
	for _, w := range ws {
		w.startBlock()
	}
	order := make([]*warp, len(ws))
	copy(order, ws)
	for {
		l.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, w := range order {
			if w.act != 0 {
				w.run()
			}
		}
		if !l.barrier() {
			break
		}
	}
	for _, w := range ws {
		w.finishAsync()
	}
}

// barrier is reached when every warp is blocked or done: it checks that every
// thread of the block waits at a barrier (with the same id) and releases them,
// or, when all have exited, reports false. Anything else is a fault.
func (l *launch) barrier() bool {
	var at, exited, total int
	var firstAt, firstExit *warp
	var atLane, exitLane int
	id := int64(-1)
	for _, w := range l.warps {
		total += bits.OnesCount32(w.exists)
		if n := bits.OnesCount32(w.atBar); n > 0 {
			at += n
			lane := bits.TrailingZeros32(w.atBar)
			if firstAt == nil {
				firstAt, atLane = w, lane
			}
			for m := w.atBar; m != 0; m &= m - 1 {
				ln := bits.TrailingZeros32(m)
				if id < 0 {
					id = w.barID[ln]
				} else if w.barID[ln] != id {
					w.faultLane(&l.prog.code[w.pc[ln]], ln, fmt.Sprintf("threads wait at barrier %d and barrier %d at the same time", id, w.barID[ln]))
				}
			}
			// bar.sync is .aligned: all threads of a warp at the same instruction.
			for m := w.atBar; m != 0; m &= m - 1 {
				ln := bits.TrailingZeros32(m)
				if w.pc[ln] != w.pc[lane] && l.prog.code[w.pc[ln]].imm2 == 1 {
					w.faultLane(&l.prog.code[w.pc[ln]], ln, fmt.Sprintf("divergent barrier: threads of warp %d wait at line %d and at line %d (bar.sync must be reached by the whole warp at one instruction)",
						w.id, l.prog.code[w.pc[lane]].line, l.prog.code[w.pc[ln]].line))
				}
			}
		}
		if n := bits.OnesCount32(w.exited & w.exists); n > 0 {
			exited += n
			if firstExit == nil {
				firstExit, exitLane = w, bits.TrailingZeros32(w.exited&w.exists)
			}
		}
	}
	if at == 0 {
		return false
	}
	if at != total {
		in := &l.prog.code[firstAt.pc[atLane]]
		msg := fmt.Sprintf("divergent barrier: %s reached by %d of the block's %d threads", in.op, at, total)
		if firstExit != nil {
			t := firstExit.tid(exitLane)
			msg += fmt.Sprintf("; thread (%d,%d,%d) and %d others exited without reaching it", t[0], t[1], t[2], exited-1)
		}
		firstAt.faultLane(in, atLane, msg)
	}
	for _, w := range l.warps {
		for m := w.atBar; m != 0; m &= m - 1 {
			w.pc[bits.TrailingZeros32(m)]++
		}
		w.atBar = 0
		w.cur, w.act = w.pick()
	}
	return true
}

// warp is 32 threads that run in lockstep where their paths agree. Lanes that
// branch apart wait, each at its own pc; the group with the lowest pc runs
// first, so paths rejoin where the code does (min-pc reconvergence, which for
// the structured code compilers emit is the immediate post-dominator).
type warp struct {
	l    *launch
	prog *program
	id   int
	r    [][32]uint64 // register slots × lanes
	p    []uint32     // predicate registers, a bit per lane

	exists uint32 // lanes that are threads of the block
	exited uint32
	atBar  uint32
	act    uint32 // the running group
	cur    int32  // its pc
	nextPC int32  // lowest pc of the other ready lanes (MaxInt32 when none)
	pc     [32]int32
	barID  [32]int64
	local  []byte // .local memory, localSize bytes per lane
	async  [32]asyncState
	alloc  *Alloc // the allocation the last global access hit
}

const fullMask = 0xffffffff

func (w *warp) initSlots(p *program) {
	for _, s := range p.inits {
		if !s.isSR {
			for i := range w.r[s.slot] {
				w.r[s.slot][i] = s.val
			}
		}
	}
}

// startBlock resets the warp for the block l.blk and fills the special registers.
func (w *warp) startBlock() {
	w.exited = ^w.exists
	w.atBar = 0
	w.act = w.exists
	w.cur = 0
	w.nextPC = math.MaxInt32
	for i := range w.pc {
		w.pc[i] = 0
	}
	if w.prog.usesAsync {
		for i := range w.async {
			w.async[i] = asyncState{}
		}
	}
	clear(w.local)
	w.fillSpecials(false)
}

// perBlock reports whether a special register changes from block to block.
func perBlock(sr special) bool {
	return sr == srCtaidX || sr == srCtaidY || sr == srCtaidZ || sr == srSmid
}

// fillSpecials fills the special-register slots: all of them (at the launch's
// start; the warps are reused by every block) or those that change per block.
func (w *warp) fillSpecials(all bool) {
	l := w.l
	b := &l.blk
	for _, s := range w.prog.inits {
		if !s.isSR || !all && !perBlock(s.sr) {
			continue
		}
		r := &w.r[s.slot]
		for lane := range r {
			t := w.id*32 + lane
			tid := [3]int{t % l.block.X, t / l.block.X % l.block.Y, t / (l.block.X * l.block.Y)}
			var v uint64
			switch s.sr {
			case srTidX, srTidY, srTidZ:
				v = uint64(tid[s.sr-srTidX])
			case srNtidX:
				v = uint64(l.block.X)
			case srNtidY:
				v = uint64(l.block.Y)
			case srNtidZ:
				v = uint64(l.block.Z)
			case srCtaidX, srCtaidY, srCtaidZ:
				v = uint64(b.ctaid[s.sr-srCtaidX])
			case srNctaidX:
				v = uint64(l.grid.X)
			case srNctaidY:
				v = uint64(l.grid.Y)
			case srNctaidZ:
				v = uint64(l.grid.Z)
			case srLaneid:
				v = uint64(lane)
			case srWarpid:
				v = uint64(w.id)
			case srNwarpid:
				v = 64
			case srSmid:
				v = uint64((b.ctaid[0] + b.ctaid[1]*l.grid.X) % l.dev.cfg.SMs)
			case srNsmid:
				v = uint64(l.dev.cfg.SMs)
			case srGridid:
				v = 1
			case srLanemaskEq:
				v = 1 << lane
			case srLanemaskLt:
				v = 1<<lane - 1
			case srLanemaskLe:
				v = 1<<(lane+1) - 1
			case srLanemaskGt:
				v = uint64(uint32(fullMask) &^ uint32(1<<(lane+1)-1))
			case srLanemaskGe:
				v = uint64(uint32(fullMask) &^ uint32(1<<lane-1))
			case srClock, srClock64, srGlobaltimer:
				v = 0
			case srDynSmem:
				v = uint64(l.dynSmem)
			case srTotalSmem:
				v = uint64(len(b.shared))
			}
			r[lane] = v
		}
	}
}

// tid returns the thread index of lane.
func (w *warp) tid(lane int) [3]int {
	t := w.id*32 + lane
	bl := w.l.block
	return [3]int{t % bl.X, t / bl.X % bl.Y, t / (bl.X * bl.Y)}
}

// ready is the lanes that can run: not exited, not waiting at a barrier.
func (w *warp) ready() uint32 { return w.exists &^ (w.exited | w.atBar) }

// park records pc for the lanes of m.
func (w *warp) park(m uint32, pc int32) {
	for ; m != 0; m &= m - 1 {
		w.pc[bits.TrailingZeros32(m)] = pc
	}
}

// pick chooses the ready lanes with the lowest pc to run next and sets nextPC
// to the lowest pc of the rest. It returns (0, 0) when no lane is ready.
func (w *warp) pick() (int32, uint32) {
	rdy := w.ready()
	if rdy == 0 {
		w.nextPC = math.MaxInt32
		return 0, 0
	}
	lo, next := int32(math.MaxInt32), int32(math.MaxInt32)
	var act uint32
	for m := rdy; m != 0; m &= m - 1 {
		ln := bits.TrailingZeros32(m)
		switch pc := w.pc[ln]; {
		case pc < lo:
			next = lo
			lo, act = pc, 1<<ln
		case pc == lo:
			act |= 1 << ln
		case pc < next:
			next = pc
		}
	}
	w.nextPC = next
	return lo, act
}

// moveTo makes the running group continue at pc: it runs on while pc is below
// every waiting lane, merges with the lanes waiting at pc, or yields to lower ones.
func (w *warp) moveTo(pc int32, act uint32) (int32, uint32) {
	if pc < w.nextPC {
		return pc, act
	}
	w.park(act, pc)
	return w.pick()
}

// run executes the warp until all its lanes have exited or wait at a barrier.
func (w *warp) run() {
	code := w.prog.code
	pc, act := w.cur, w.act
	for act != 0 {
		in := &code[pc]
		m := act
		if in.guard >= 0 {
			g := w.p[in.guard]
			if in.gneg {
				g = ^g
			}
			m &= g
		}
		switch in.ctl {
		case ctlNone:
			if m != 0 {
				in.fn(w, in, m)
			}
			pc++
			if pc >= w.nextPC {
				pc, act = w.moveTo(pc, act)
			}
		case ctlBra, ctlBraUni:
			switch {
			case m == act:
				pc, act = w.moveTo(in.target, act)
			case m == 0:
				pc, act = w.moveTo(pc+1, act)
			default:
				if in.ctl == ctlBraUni {
					w.fault(in, bits.TrailingZeros32(m), fmt.Sprintf("bra.uni taken by threads %s but not by %s of the same warp", laneList(m), laneList(act&^m)))
				}
				w.park(act&^m, pc+1)
				w.park(m, in.target)
				pc, act = w.pick()
			}
		case ctlExit:
			if m != 0 {
				w.park(m, pc)
				w.exited |= m
				act &^= m
				if act == 0 {
					pc, act = w.pick()
					continue
				}
			}
			pc, act = w.moveTo(pc+1, act)
		case ctlBar:
			if m != 0 {
				in.fn(w, in, m)
				w.park(m, pc)
				w.atBar |= m
				act &^= m
				if act == 0 {
					pc, act = w.pick()
					continue
				}
			}
			pc, act = w.moveTo(pc+1, act)
		}
	}
	w.cur, w.act = pc, act
}

// laneList writes a lane mask as "lanes 0-15,17".
func laneList(m uint32) string {
	var parts []string
	for i := 0; i < 32; {
		if m>>i&1 == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 32 && m>>(j+1)&1 == 1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(i))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		}
		i = j + 1
	}
	if len(parts) == 0 {
		return "lanes (none)"
	}
	return "lanes " + strings.Join(parts, ",")
}

// fault stops the launch with a fault of lane at in.
func (w *warp) fault(in *inst, lane int, msg string) {
	w.faultLane(in, lane, msg)
}

func (w *warp) faultLane(in *inst, lane int, msg string) {
	panic(w.newFault(in, lane, msg))
}

func (w *warp) newFault(in *inst, lane int, msg string) *Fault {
	f := &Fault{Kernel: w.prog.name, Module: w.prog.module, Line: int(in.line), Op: in.op, Block: w.l.blk.ctaid, Msg: msg}
	if lane >= 0 {
		f.Thread, f.HasThread = w.tid(lane), true
	}
	return f
}

// faultAddr stops the launch with a fault of lane at address addr.
func (w *warp) faultAddr(in *inst, lane int, addr uint64, msg string) {
	f := w.newFault(in, lane, msg)
	f.Addr, f.HasAddr = addr, true
	panic(f)
}

// sortedLanes returns the lanes of m in a seeded random order (atomics).
func (w *warp) shuffledLanes(m uint32) []int {
	lanes := make([]int, 0, 32)
	for ; m != 0; m &= m - 1 {
		lanes = append(lanes, bits.TrailingZeros32(m))
	}
	w.l.rng.Shuffle(len(lanes), func(i, j int) { lanes[i], lanes[j] = lanes[j], lanes[i] })
	return lanes
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }
