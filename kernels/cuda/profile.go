package cuda

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// A profile of where the GPU's time goes, kernel by kernel: Profile runs some
// work with a timing event recorded on the backend's stream before and after
// every kernel launch and GEMM, then sums the GPU time between each pair by
// kernel name (a GEMM by its shape, types and epilogue). The GPU check prints
// one for a GPT-2 step beside PyTorch's (tools/gpu/check.sh), so a session with
// a GPU sees at once which ops hold the step back. The events cost a little
// GPU and host time of their own: the profile is for shares, and the tokens/s
// figures come from runs without it.

// OpTime is one kernel's (or one GEMM kind's) GPU time over a profile.
type OpTime struct {
	Name   string
	Calls  int
	Millis float64
	FLOPs  float64 // over all calls: GEMMs' 2mnk, the flash kernels' products; 0 for others
}

// TFLOPS is the op's rate in TFLOP/s, 0 when it has no FLOP count.
func (o OpTime) TFLOPS() float64 {
	if o.FLOPs == 0 || o.Millis <= 0 {
		return 0
	}
	return o.FLOPs / (o.Millis * 1e9)
}

// Profile is what Backend.Profile measured.
type Profile struct {
	Ops        []OpTime // largest first
	BusyMillis float64  // the sum of Ops' times
	SpanMillis float64  // GPU time from the first op's start to the last op's end
	HostMillis float64  // wall time of the work and the final synchronisation
}

// profiler holds the events of the ops launched while a profile runs.
type profiler struct {
	marks []profMark
	all   []event // every event created, destroyed at the end
	err   error
}

type profMark struct {
	name       string
	flops      float64
	start, end event
}

// Profile runs f, which uses the backend (a training step, say), timing every
// kernel and GEMM it issues on the backend's stream. Memsets, copies and
// collectives are not timed: they show in the gap between SpanMillis and
// BusyMillis (those on the communication stream, not at all). If f panics, the
// profile ends and the panic goes on.
func (b *Backend) Profile(f func()) (Profile, error) {
	b.enter()
	if b.prof != nil {
		b.leave()
		return Profile{}, fmt.Errorf("cuda: Profile inside Profile")
	}
	p := &profiler{}
	b.prof = p
	b.leave()
	ended := false
	end := func() { // with the backend entered
		if !ended {
			ended = true
			b.prof, b.profFLOPs = nil, 0
			for _, e := range p.all {
				_ = b.drv.eventDestroy(e)
			}
		}
	}
	defer func() {
		if !ended {
			b.enter()
			end()
			b.leave()
		}
	}()
	t0 := time.Now()
	f()
	b.enter()
	defer b.leave()
	defer end()
	if err := b.drv.streamSynchronize(b.stream); err != nil {
		return Profile{}, err
	}
	if p.err != nil {
		return Profile{}, p.err
	}
	out := Profile{HostMillis: float64(time.Since(t0).Microseconds()) / 1e3}
	by := map[string]*OpTime{}
	for i, m := range p.marks {
		ms, err := b.drv.eventElapsed(m.start, m.end)
		if err != nil {
			return Profile{}, fmt.Errorf("cuda: profile of %s: %w", m.name, err)
		}
		o := by[m.name]
		if o == nil {
			o = &OpTime{Name: m.name}
			by[m.name] = o
		}
		o.Calls++
		o.Millis += float64(ms)
		o.FLOPs += m.flops
		out.BusyMillis += float64(ms)
		if i == len(p.marks)-1 {
			span, err := b.drv.eventElapsed(p.marks[0].start, m.end)
			if err != nil {
				return Profile{}, fmt.Errorf("cuda: profile span: %w", err)
			}
			out.SpanMillis = float64(span)
		}
	}
	for _, o := range by {
		out.Ops = append(out.Ops, *o)
	}
	slices.SortFunc(out.Ops, func(a, c OpTime) int {
		if a.Millis != c.Millis {
			if a.Millis > c.Millis {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, c.Name)
	})
	return out, nil
}

// profBegin records the start event of op name (flops of work, when known)
// when a profile runs (called with the backend entered, before the launch);
// profEnd its end.
func (b *Backend) profBegin(name string, flops float64) {
	p := b.prof
	if p == nil || p.err != nil {
		return
	}
	start, err1 := p.event(b)
	end, err2 := p.event(b)
	if err1 != nil || err2 != nil {
		p.err = fmt.Errorf("cuda: profile: %w", firstErr(err1, err2))
		return
	}
	if err := b.drv.eventRecord(start, b.stream); err != nil {
		p.err = err
		return
	}
	p.marks = append(p.marks, profMark{name: name, flops: flops, start: start, end: end})
}

// profDrop forgets the last op's mark: a GEMM the library refused (and that the
// backend then issues another way) did not run.
func (b *Backend) profDrop() {
	if p := b.prof; p != nil && len(p.marks) > 0 {
		p.marks = p.marks[:len(p.marks)-1]
	}
}

func (b *Backend) profEnd() {
	p := b.prof
	if p == nil || p.err != nil || len(p.marks) == 0 {
		return
	}
	if err := b.drv.eventRecord(p.marks[len(p.marks)-1].end, b.stream); err != nil {
		p.err = err
	}
}

func (p *profiler) event(b *Backend) (event, error) {
	e, err := b.drv.timingEventCreate()
	if err == nil {
		p.all = append(p.all, e)
	}
	return e, err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gemmName names a GEMM in a profile: cuBLAS's m×n×k and transposes, the
// operand types, a batch count and the epilogue.
func gemmName(g gemm) string {
	t := func(x bool) byte {
		if x {
			return 'T'
		}
		return 'N'
	}
	s := fmt.Sprintf("gemm %c%c %d×%d×%d %s", t(g.transA), t(g.transB), g.m, g.n, g.k, shortType(g.aType))
	if g.cType != g.aType {
		s += "→" + shortType(g.cType)
	}
	if g.batch > 1 {
		s += fmt.Sprintf(" batch %d", g.batch)
	}
	if g.epilogue != epiNone {
		s += " " + g.epilogue.String()
	}
	if g.beta != 0 {
		s += " +C"
	}
	return s
}

func shortType(t int32) string {
	switch t {
	case cudaR32F:
		return "f32"
	case cudaR16BF:
		return "bf16"
	case cudaR16F:
		return "f16"
	}
	return fmt.Sprint(t)
}

// Write prints p as a table: each op's share of the busy time, its calls,
// milliseconds and (GEMMs, flash attention) TFLOP/s, and the span and host
// time below.
func (p Profile) Write(w io.Writer) {
	fmt.Fprintf(w, "%-60s %6s %10s %7s %9s\n", "op (kernel, or GEMM m×n×k)", "calls", "ms", "share", "TFLOP/s")
	for _, o := range p.Ops {
		share := 0.0
		if p.BusyMillis > 0 {
			share = 100 * o.Millis / p.BusyMillis
		}
		rate := ""
		if t := o.TFLOPS(); t > 0 {
			rate = fmt.Sprintf("%9.1f", t)
		}
		fmt.Fprintf(w, "%-60s %6d %10.3f %6.1f%% %s\n", o.Name, o.Calls, o.Millis, share, rate)
	}
	fmt.Fprintf(w, "busy %.3f ms (kernels and GEMMs), span %.3f ms (first start to last end: the rest is gaps, copies, memsets), host %.3f ms\n",
		p.BusyMillis, p.SpanMillis, p.HostMillis)
}
