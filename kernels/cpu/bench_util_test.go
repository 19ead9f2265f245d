package cpu

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report it per op
// ("cpu-ns/op") beside wall time because the machines this runs on are shared:
// wall time counts other jobs' use of the cores, CPU time does not (for one
// thread it is the wall time on an idle core; for two it sums both).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs fn b.N times and reports cpu-ns/op and, when flops > 0,
// GFLOP/s by wall time and by CPU time (GFLOP/cpu-s: per core busy).
func measure(b *testing.B, flops float64, fn func()) {
	fn() // warm up: scratch allocation, page faults
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		fn()
	}
	cpu := cpuTime() - c0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if flops > 0 {
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// randFloats returns n values in [-1, 1) from a fixed xorshift sequence
// (cheap: the 124M shapes need hundreds of millions).
func randFloats(n int) []float32 {
	x := alignedFloats(n)
	s := uint64(n)*0x9e3779b97f4a7c15 | 1
	for i := range x {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		x[i] = float32(int32(s>>32)) / (1 << 31)
	}
	return x
}
