package cuda

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gptkit/kernels/cuda/sim"
)

// simDriver is the driverAPI of a simulated GPU: device memory is Go memory
// (kernels/cuda/sim's allocation table checks every access), modules are the
// PTX text parsed and decoded by the simulator, and streams are queues of work
// that run, in order, when something waits for them (a stream or event
// synchronization, a copy to pageable host memory, a free). So, as on a GPU,
// the host must synchronize before it reads what the device wrote; a launch's
// configuration is checked when it is queued, its faults surface at the next
// synchronization, and a fault is sticky (the context is lost).
type simDriver struct {
	opts SimOptions
	dev  *sim.Device
	gpus []simGPU // the visible GPUs of the simulated machine (sim_devices.go)

	mu      sync.Mutex
	next    uintptr
	streams map[stream]*simStream
	events  map[event]*simEvent
	modules map[module]*sim.Image
	funcs   map[function]*sim.Kernel
	pinned  map[uintptr]int // pinned host allocations: address → size
	hostMem map[uintptr][]byte
	sticky  error
	// launches counts the launches of each kernel by name (tests check that the
	// conformance suite runs every kernel).
	launches map[string]int

	hz        hazards       // the streams' ordering, checked (sim_streams.go)
	transport Transport     // set by NewNCCL: the simulated NCCL's link to other processes
	unhang    chan struct{} // closed when injected hangs end (sim_watch.go)
}

type simOp struct {
	name string
	run  func() error
}

type simStream struct {
	q        []simOp
	done     uint64     // ops taken to run so far
	sent     uint64     // ops queued so far
	finished uint64     // ops that have run to completion
	run      sync.Mutex // held while one of its ops runs: one at a time, in order
	async    bool       // a goroutine runs it in the background (eventQuery)
	target   uint64     // ... up to this many ops
	vc       vclock     // the ops of every stream known to come before its next op (sim_streams.go)
}

type simEvent struct {
	s  *simStream
	at uint64 // the stream's op count when the event was recorded
	vc vclock // the stream's clock then
	// A timing event's record queues an op that stamps the host's clock when
	// the stream reaches it: its elapsed times are the simulator's CPU time.
	timing  bool
	stamped bool
	stamp   time.Time
}

func newSimDriver(o SimOptions) *simDriver {
	if o.SMs <= 0 {
		o.SMs = 8
	}
	d := &simDriver{opts: o, dev: sim.NewDevice(sim.Config{Seed: o.Seed, MemoryBytes: o.Memory, SMs: o.SMs, ExactApprox: o.ExactApprox}),
		next: 1, streams: map[stream]*simStream{0: {}}, events: map[event]*simEvent{}, modules: map[module]*sim.Image{},
		funcs: map[function]*sim.Kernel{}, pinned: map[uintptr]int{}, hostMem: map[uintptr][]byte{}, gpus: simDevices(o),
		launches: map[string]int{}, hz: newHazards(o)}
	return d
}

// simName is the device name the simulator reports.
const simName = "cuda-sim (simulated sm_80)"

func simErr(call string, r int32, format string, args ...any) error {
	return fmt.Errorf("cuda: %s: %w: %s", call, Result(r), fmt.Sprintf(format, args...))
}

func (d *simDriver) handle() uintptr {
	h := d.next
	d.next++
	return h
}

func (d *simDriver) name() string                { return "cuda-sim" }
func (d *simDriver) driverVersion() (int, error) { return minDriverVersion, nil }
func (d *simDriver) init() error                 { return nil }
func (d *simDriver) deviceCount() (int, error)   { return len(d.gpus), nil }

func (d *simDriver) checkDev(call string, dev int) error {
	if dev < 0 || dev >= len(d.gpus) {
		return simErr(call, 101, "device %d (the simulated machine shows %d)", dev, len(d.gpus))
	}
	return nil
}

func (d *simDriver) deviceName(dev int) (string, error) {
	return simName, d.checkDev("cuDeviceGetName", dev)
}

// the attributes the simulator reports: sm_80 with the configured SMs
func (d *simDriver) deviceAttribute(attr int32, dev int) (int, error) {
	if err := d.checkDev("cuDeviceGetAttribute", dev); err != nil {
		return 0, err
	}
	switch attr {
	case 1: // max threads per block
		return 1024, nil
	case 8: // max shared memory per block
		return 48 << 10, nil
	case 10: // warp size
		return 32, nil
	case attrSMCount:
		return d.opts.SMs, nil
	case attrComputeMajor:
		return 8, nil
	case attrComputeMinor:
		return 0, nil
	case attrManagedMemory, attrConcurrentManagedAccess:
		return 1, nil
	case 97: // max shared memory per block, opt-in
		return 163 << 10, nil
	}
	return 0, simErr("cuDeviceGetAttribute", 1, "attribute %d is not simulated", attr)
}

func (d *simDriver) deviceTotalMem(dev int) (uint64, error) {
	_, total := d.dev.Mem.Info()
	return total, d.checkDev("cuDeviceTotalMem", dev)
}

func (d *simDriver) primaryCtxRetain(dev int) (cuContext, error) {
	return 1, d.checkDev("cuDevicePrimaryCtxRetain", dev)
}

func (d *simDriver) primaryCtxRelease(dev int) error {
	return d.checkDev("cuDevicePrimaryCtxRelease", dev)
}

func (d *simDriver) ctxSetCurrent(c cuContext) error {
	if c != 1 {
		return simErr("cuCtxSetCurrent", 201, "context %#x", c)
	}
	return nil
}

// streams and events

func (d *simDriver) stream(call string, s stream) (*simStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sticky != nil {
		return nil, d.sticky
	}
	st, ok := d.streams[s]
	if !ok {
		return nil, simErr(call, 400, "stream %#x does not exist", s)
	}
	return st, nil
}

// enqueue queues op on stream s.
func (d *simDriver) enqueue(call string, s stream, run func() error) error {
	return d.enqueueAccess(call, s, nil, run)
}

// enqueueAccess queues op on stream s, touching the device memory acc says,
// after the hazard check (sim_streams.go).
func (d *simDriver) enqueueAccess(call string, s stream, acc []memRange, run func() error) error {
	st, err := d.stream(call, s)
	if err != nil {
		return err
	}
	d.mu.Lock()
	if err := d.admit(call, s, st, acc); err != nil {
		d.mu.Unlock()
		return err
	}
	st.q = append(st.q, simOp{name: call, run: run})
	st.sent++
	d.mu.Unlock()
	return nil
}

// flushTo runs st's queued ops until n have run in all (every op when n is
// past the end). An op's error is sticky: every later call returns it.
func (d *simDriver) flushTo(st *simStream, n uint64) error {
	for {
		st.run.Lock()
		d.mu.Lock()
		if d.sticky != nil {
			err := d.sticky
			d.mu.Unlock()
			st.run.Unlock()
			return err
		}
		if st.done >= n || len(st.q) == 0 {
			d.mu.Unlock()
			st.run.Unlock()
			return nil
		}
		op := st.q[0]
		st.q = st.q[1:]
		st.done++
		d.mu.Unlock()
		err := op.run()
		d.mu.Lock()
		if err == nil {
			st.finished++
		} else if d.sticky == nil {
			d.sticky = err
			if !strings.HasPrefix(err.Error(), "cuda: ") {
				d.sticky = fmt.Errorf("cuda: %s: %w", op.name, err)
			}
		}
		err = d.sticky
		d.mu.Unlock()
		st.run.Unlock()
		if err != nil {
			return err
		}
	}
}

func (d *simDriver) flushAll() error {
	d.mu.Lock()
	var sts []*simStream
	known := vclock{}
	for s, st := range d.streams {
		sts = append(sts, st)
		known.merge(streamClock(s, st))
	}
	d.mu.Unlock()
	return d.hostWaits(known, func() error {
		for _, st := range sts {
			if err := d.flushTo(st, ^uint64(0)); err != nil {
				return err
			}
		}
		return nil
	})
}

// hostWaits runs wait (a flush) and then tells the hazard check what the host
// knows has run: known (sim_streams.go).
func (d *simDriver) hostWaits(known vclock, wait func() error) error {
	if err := wait(); err != nil {
		return err
	}
	d.mu.Lock()
	d.hostKnows(known)
	d.mu.Unlock()
	return nil
}

func (d *simDriver) streamCreate() (stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := stream(d.handle())
	d.streams[s] = &simStream{}
	return s, nil
}

func (d *simDriver) streamDestroy(s stream) error {
	st, err := d.stream("cuStreamDestroy", s)
	if err != nil {
		return err
	}
	if s == 0 {
		return simErr("cuStreamDestroy", 400, "the null stream")
	}
	err = d.flushTo(st, ^uint64(0)) // destroying lets queued work finish
	d.mu.Lock()
	delete(d.streams, s)
	d.mu.Unlock()
	return err
}

func (d *simDriver) streamSynchronize(s stream) error {
	st, err := d.stream("cuStreamSynchronize", s)
	if err != nil {
		return err
	}
	d.mu.Lock()
	known := streamClock(s, st)
	d.mu.Unlock()
	return d.hostWaits(known, func() error { return d.flushTo(st, ^uint64(0)) })
}

func (d *simDriver) event(call string, e event) (*simEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sticky != nil {
		return nil, d.sticky
	}
	ev, ok := d.events[e]
	if !ok {
		return nil, simErr(call, 400, "event %#x does not exist", e)
	}
	return ev, nil
}

func (d *simDriver) eventCreate() (event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := event(d.handle())
	d.events[e] = &simEvent{}
	return e, nil
}

func (d *simDriver) eventRecord(e event, s stream) error {
	ev, err := d.event("cuEventRecord", e)
	if err != nil {
		return err
	}
	if ev.timing {
		d.mu.Lock()
		ev.stamped = false
		d.mu.Unlock()
		if err := d.enqueue("cuEventRecord", s, func() error {
			d.mu.Lock()
			ev.stamped, ev.stamp = true, time.Now()
			d.mu.Unlock()
			return nil
		}); err != nil {
			return err
		}
	}
	st, err := d.stream("cuEventRecord", s)
	if err != nil {
		return err
	}
	d.mu.Lock()
	ev.s, ev.at = st, st.sent
	if st.vc == nil {
		st.vc = vclock{}
	}
	ev.vc = streamClock(s, st)
	d.mu.Unlock()
	return nil
}

// eventSynchronize waits until the work queued before the record has run (an
// event never recorded is complete at once, as in CUDA).
func (d *simDriver) eventSynchronize(e event) error {
	ev, err := d.event("cuEventSynchronize", e)
	if err != nil {
		return err
	}
	if ev.s == nil {
		return nil
	}
	return d.hostWaits(ev.vc, func() error { return d.flushTo(ev.s, ev.at) })
}

// streamWaitEvent makes the work queued on s from now on wait for the event's
// work: the wait is itself a queued op that runs the other stream up to the record.
func (d *simDriver) streamWaitEvent(s stream, e event) error {
	ev, err := d.event("cuStreamWaitEvent", e)
	if err != nil {
		return err
	}
	st, err := d.stream("cuStreamWaitEvent", s)
	if err != nil {
		return err
	}
	d.mu.Lock()
	other, at := ev.s, ev.at
	if other != nil {
		if st.vc == nil {
			st.vc = vclock{}
		}
		st.vc.merge(ev.vc) // what the event covers comes before what s runs next
	}
	d.mu.Unlock()
	if other == nil {
		return nil
	}
	return d.enqueue("cuStreamWaitEvent", s, func() error { return d.flushTo(other, at) })
}

func (d *simDriver) timingEventCreate() (event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := event(d.handle())
	d.events[e] = &simEvent{timing: true}
	return e, nil
}

// eventElapsed: as CUDA, CUDA_ERROR_INVALID_HANDLE (400) for an event created
// without timing and CUDA_ERROR_NOT_READY (600) for one not yet reached.
func (d *simDriver) eventElapsed(start, end event) (float32, error) {
	a, err := d.event("cuEventElapsedTime", start)
	if err != nil {
		return 0, err
	}
	b, err := d.event("cuEventElapsedTime", end)
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !a.timing || !b.timing:
		return 0, simErr("cuEventElapsedTime", 400, "an event created with CU_EVENT_DISABLE_TIMING")
	case !a.stamped || !b.stamped:
		return 0, simErr("cuEventElapsedTime", 600, "an event not yet reached")
	}
	return float32(b.stamp.Sub(a.stamp).Seconds() * 1e3), nil
}

func (d *simDriver) eventDestroy(e event) error {
	if _, err := d.event("cuEventDestroy", e); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.events, e)
	d.mu.Unlock()
	return nil
}

// modules

// moduleLoad JITs PTX as a CUDA 11.8 driver on an sm_80 GPU would: a newer
// PTX ISA or a higher target is refused as the real driver refuses it.
func (d *simDriver) moduleLoad(name string, ptx []byte) (module, error) {
	m, err := sim.Parse(name, ptx)
	if err != nil {
		return 0, simErr("cuModuleLoadDataEx", errInvalidPTX, "%v", err)
	}
	if v, ok := ptxVersion(m.Version); !ok || v > 78 {
		return 0, simErr("cuModuleLoadDataEx", errUnsupportedPTXVers, "%s is PTX ISA %q; the simulated driver (CUDA 11.8) JITs up to 7.8", name, m.Version)
	}
	if sm, ok := strings.CutPrefix(m.Target, "sm_"); !ok || len(sm) < 2 || sm > "80" && len(sm) == 2 || len(sm) > 2 && sm[:2] > "80" {
		return 0, simErr("cuModuleLoadDataEx", errNoBinaryForGPU, "%s targets %q; the simulated GPU is sm_80", name, m.Target)
	}
	im, err := d.dev.Load(m)
	if err != nil {
		return 0, simErr("cuModuleLoadDataEx", errInvalidPTX, "%v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	h := module(d.handle())
	d.modules[h] = im
	return h, nil
}

// ptxVersion reads "7.8" as 78.
func ptxVersion(v string) (int, bool) {
	major, minor, ok := strings.Cut(v, ".")
	if !ok || len(major) != 1 || len(minor) != 1 || major[0] < '0' || major[0] > '9' || minor[0] < '0' || minor[0] > '9' {
		return 0, false
	}
	return int(major[0]-'0')*10 + int(minor[0]-'0'), true
}

func (d *simDriver) moduleUnload(m module) error {
	if err := d.flushAll(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	im, ok := d.modules[m]
	if !ok {
		return simErr("cuModuleUnload", 400, "module %#x", m)
	}
	delete(d.modules, m)
	return im.Unload()
}

func (d *simDriver) moduleGetFunction(m module, name string) (function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	im, ok := d.modules[m]
	if !ok {
		return 0, simErr("cuModuleGetFunction", 400, "module %#x", m)
	}
	k, err := im.Kernel(name)
	if err != nil {
		return 0, simErr("cuModuleGetFunction "+name, 500, "%v", err)
	}
	f := function(d.handle())
	d.funcs[f] = k
	return f, nil
}

func (d *simDriver) kernel(call string, f function) (*sim.Kernel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.funcs[f]
	if !ok {
		return nil, simErr(call, 400, "function %#x", f)
	}
	return k, nil
}

func (d *simDriver) funcSetMaxDynamicShared(f function, bytes int) error {
	k, err := d.kernel("cuFuncSetAttribute", f)
	if err != nil {
		return err
	}
	if err := k.SetMaxDynamicShared(bytes); err != nil {
		return simErr("cuFuncSetAttribute", 1, "%v", err)
	}
	return nil
}

func (d *simDriver) launchKernel(f function, grid, block dim3, sharedBytes int, s stream, args []uint64) error {
	k, err := d.kernel("cuLaunchKernel", f)
	if err != nil {
		return err
	}
	cfg := sim.LaunchConfig{Grid: sim.Dim3{X: int(grid.x), Y: int(grid.y), Z: int(grid.z)},
		Block: sim.Dim3{X: int(block.x), Y: int(block.y), Z: int(block.z)}, SharedBytes: sharedBytes,
		Args: append([]uint64(nil), args...)}
	if err := k.Check(cfg); err != nil {
		return simErr("cuLaunchKernel "+k.Name(), 1, "%v", err)
	}
	d.mu.Lock()
	d.launches[k.Name()]++
	d.mu.Unlock()
	return d.enqueueAccess("kernel "+k.Name(), s, d.takeDeclared(), func() error {
		err := k.Launch(cfg)
		var f *sim.Fault
		if errors.As(err, &f) {
			r := int32(719) // CUDA_ERROR_LAUNCH_FAILED
			switch {
			case f.HasAddr && contains(f.Msg, "misaligned"):
				r = 716
			case f.HasAddr && contains(f.Msg, "out-of-bounds"):
				r = 700
			}
			return fmt.Errorf("%w: %w", Result(r), f)
		}
		return err
	})
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// memory

func (d *simDriver) alloc(call string, bytes int, what string) (*sim.Alloc, error) {
	if d.sticky != nil {
		return nil, d.sticky
	}
	a, err := d.dev.Mem.Allocate(bytes, what)
	if errors.Is(err, sim.ErrOutOfMemory) {
		return nil, simErr(call, errOutOfMemory, "%v", err)
	}
	return a, err
}

func (d *simDriver) memAlloc(bytes int) (devicePtr, error) {
	a, err := d.alloc(fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), bytes, "device")
	if err != nil {
		return 0, err
	}
	return uintptr(a.Base), nil
}

func (d *simDriver) memAllocManaged(bytes int) (unsafe.Pointer, error) {
	a, err := d.alloc(fmt.Sprintf("cuMemAllocManaged(%d bytes)", bytes), bytes, "managed")
	if err != nil {
		return nil, err
	}
	return unsafe.Pointer(unsafe.SliceData(a.Buf)), nil
}

func (d *simDriver) memAllocHost(bytes int) (unsafe.Pointer, error) {
	b := make([]byte, max(bytes, 1)+sim.Align)
	off := (sim.Align - int(uintptr(unsafe.Pointer(&b[0]))%sim.Align)) % sim.Align
	p := unsafe.Pointer(&b[off])
	d.mu.Lock()
	d.pinned[uintptr(p)] = bytes
	d.hostMem[uintptr(p)] = b
	d.mu.Unlock()
	return p, nil
}

func (d *simDriver) memFree(p devicePtr) error {
	if err := d.flushAll(); err != nil { // cuMemFree waits for the device
		return err
	}
	if err := d.dev.Mem.Free(uint64(p)); err != nil {
		return simErr("cuMemFree", 1, "%v", err)
	}
	return nil
}

// memFreeAsync frees the allocation at p in stream order, as cuMemFreeAsync:
// when the work queued on s before it has run (a write of the whole block, for
// the streams' hazard check).
func (d *simDriver) memFreeAsync(p devicePtr, s stream) error {
	al := d.dev.Mem.Lookup(uint64(p))
	if al == nil || al.Base != uint64(p) {
		return simErr("cuMemFreeAsync", 1, "%#x does not start an allocation", p)
	}
	acc := []memRange{bytesRange(p, len(al.Buf), true)}
	return d.enqueueAccess("cuMemFreeAsync", s, acc, func() error {
		if err := d.dev.Mem.Free(uint64(p)); err != nil {
			return simErr("cuMemFreeAsync", 1, "%v", err)
		}
		return nil
	})
}

func (d *simDriver) memFreeHost(p unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.pinned[uintptr(p)]; !ok {
		return simErr("cuMemFreeHost", 1, "%p is not pinned host memory", p)
	}
	delete(d.pinned, uintptr(p))
	delete(d.hostMem, uintptr(p))
	return nil
}

// isPinned reports whether [p, p+n) lies in pinned host memory (copies from or
// to it are asynchronous; pageable memory is staged at the call).
func (d *simDriver) isPinned(p unsafe.Pointer, n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	addr := uintptr(p)
	for k, size := range d.pinned {
		if addr >= k && addr+uintptr(n) <= k+uintptr(size) {
			return true
		}
	}
	return false
}

// devBytes checks a device range at the call (an invalid pointer is refused
// synchronously, as by the driver).
func (d *simDriver) devBytes(call string, p devicePtr, n int) ([]byte, error) {
	b, err := d.dev.Mem.Bytes(uint64(p), n)
	if err != nil {
		return nil, simErr(call, 1, "%v", err)
	}
	return b, nil
}

func (d *simDriver) memcpyHtoD(dst devicePtr, src unsafe.Pointer, n int, s stream) error {
	if n == 0 {
		return nil
	}
	to, err := d.devBytes("cuMemcpyHtoDAsync", dst, n)
	if err != nil {
		return err
	}
	from := unsafe.Slice((*byte)(src), n)
	if !d.isPinned(src, n) {
		from = append([]byte(nil), from...) // pageable memory is staged now
	}
	return d.enqueueAccess("cuMemcpyHtoDAsync", s, []memRange{bytesRange(dst, n, true)}, func() error { copy(to, from); return nil })
}

func (d *simDriver) memcpyDtoH(dst unsafe.Pointer, src devicePtr, n int, s stream) error {
	if n == 0 {
		return nil
	}
	from, err := d.devBytes("cuMemcpyDtoHAsync", src, n)
	if err != nil {
		return err
	}
	to := unsafe.Slice((*byte)(dst), n)
	acc := []memRange{bytesRange(src, n, false)}
	if d.isPinned(dst, n) {
		return d.enqueueAccess("cuMemcpyDtoHAsync", s, acc, func() error { copy(to, from); return nil })
	}
	// to pageable memory the copy returns when done: the stream runs first
	if err := d.enqueueAccess("cuMemcpyDtoHAsync", s, acc, func() error { copy(to, from); return nil }); err != nil {
		return err
	}
	return d.streamSynchronize(s)
}

func (d *simDriver) memcpyDtoD(dst, src devicePtr, n int, s stream) error {
	if n == 0 {
		return nil
	}
	to, err := d.devBytes("cuMemcpyDtoDAsync", dst, n)
	if err != nil {
		return err
	}
	from, err := d.devBytes("cuMemcpyDtoDAsync", src, n)
	if err != nil {
		return err
	}
	acc := []memRange{bytesRange(src, n, false), bytesRange(dst, n, true)}
	return d.enqueueAccess("cuMemcpyDtoDAsync", s, acc, func() error { copy(to, from); return nil })
}

func (d *simDriver) memsetD8(dst devicePtr, v uint8, n int, s stream) error {
	if n == 0 {
		return nil
	}
	b, err := d.devBytes("cuMemsetD8Async", dst, n)
	if err != nil {
		return err
	}
	return d.enqueueAccess("cuMemsetD8Async", s, []memRange{bytesRange(dst, n, true)}, func() error {
		for i := range b {
			b[i] = v
		}
		return nil
	})
}

func (d *simDriver) memsetD32(dst devicePtr, v uint32, n int, s stream) error {
	if n == 0 {
		return nil
	}
	if dst%4 != 0 {
		return simErr("cuMemsetD32Async", 1, "address %#x is not 4-byte aligned", dst)
	}
	b, err := d.devBytes("cuMemsetD32Async", dst, 4*n)
	if err != nil {
		return err
	}
	return d.enqueueAccess("cuMemsetD32Async", s, []memRange{bytesRange(dst, 4*n, true)}, func() error {
		for i := 0; i < n; i++ {
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
		return nil
	})
}

func (d *simDriver) memGetInfo() (free, total uint64, err error) {
	free, total = d.dev.Mem.Info()
	return free, total, nil
}

var _ driverAPI = (*simDriver)(nil)
