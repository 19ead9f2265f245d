package sim

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkKernel runs committed kernels on the simulator and reports the
// simulated throughput per CPU second (lane-instructions are what a GPU counts
// as thread-instructions). The machine may be shared: CPU time, not wall time.
//
//	go test ./kernels/cuda/sim -run '^$' -bench Kernel -benchtime 3x
func BenchmarkKernel(b *testing.B) {
	for _, c := range []struct {
		file, kernel string
		n            int
	}{
		{"../ptx/elementwise.ptx", "gelu_forward_f32", 393216},
		{"../ptx/elementwise.ptx", "convert_f32_bf16", 98304},
	} {
		b.Run(c.kernel, func(b *testing.B) {
			d := NewDevice(Config{Seed: 1})
			src, err := os.ReadFile(c.file)
			if err != nil {
				b.Fatal(err)
			}
			m, _ := Parse(c.file, src)
			im, err := d.Load(m)
			if err != nil {
				b.Fatal(err)
			}
			k, _ := im.Kernel(c.kernel)
			x, _ := d.Mem.Allocate(4*c.n, "device")
			y, _ := d.Mem.Allocate(4*c.n, "device")
			args := []uint64{x.Base, y.Base, uint64(c.n)}
			blocks := min((c.n+255)/256, 256)
			b.ResetTimer()
			t0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if err := k.Launch(LaunchConfig{Grid: Dim3{blocks, 1, 1}, Block: Dim3{256, 1, 1}, Args: args}); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - t0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*c.n), "cpu-ns/element")
		})
	}
}

// BenchmarkDispatch: a loop of adds, the cost of one warp-instruction.
func BenchmarkDispatch(b *testing.B) {
	src := ptxHeader + `
.visible .entry loop(.param .u64 p)
{
	.reg .b32 %r<6>;
	.reg .pred %p1;
	mov.u32 %r1, 0;
	mov.u32 %r2, %tid.x;
$L:
	add.u32 %r2, %r2, 3;
	add.u32 %r3, %r2, %r1;
	xor.b32 %r4, %r3, %r2;
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 1000;
	@%p1 bra $L;
	ret;
}`
	d := NewDevice(Config{})
	m, _ := Parse("l.ptx", []byte(src))
	im, err := d.Load(m)
	if err != nil {
		b.Fatal(err)
	}
	k, _ := im.Kernel("loop")
	b.ResetTimer()
	t0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := k.Launch(LaunchConfig{Grid: Dim3{8, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{0}}); err != nil {
			b.Fatal(err)
		}
	}
	warpInstrs := float64(b.N) * 64 * 6 * 1000
	b.ReportMetric(float64((cpuTime()-t0).Nanoseconds())/warpInstrs, "cpu-ns/warp-instr")
}
