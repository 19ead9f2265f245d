package dist

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAllReduce measures the ring all-reduce between ranks of this process,
// over loopback TCP (tcp) and over the Unix sockets same-host ranks use (local),
// for 1, 10 and 100 MB buffers on 2 and 4 ranks. It reports the
// bus bandwidth (NCCL's busbw: 2(W-1)/W · bytes / time, what each link carries per
// second), the memcpy bandwidth of the same buffer measured in the same run, and
// their ratio (the goal: at least 0.5).
//
//	go test ./train/dist -run '^$' -bench BenchmarkAllReduce -benchtime 5x
func BenchmarkAllReduce(b *testing.B) {
	for _, transport := range []string{"tcp", "local"} {
		for _, world := range []int{2, 4} {
			for _, mb := range []int{1, 10, 100} {
				b.Run(fmt.Sprintf("%s-w%d-%dMB", transport, world, mb), func(b *testing.B) {
					benchAllReduce(b, world, mb, transport == "tcp")
				})
			}
		}
	}
}

func benchAllReduce(b *testing.B, world, mb int, tcpOnly bool) {
	n := mb << 20 / 4
	comms := startGroup(b, world, Options{Timeout: time.Minute, TCPOnly: tcpOnly}, ServerConfig{})
	bufs := randomBufs(world, n, 1)
	ctx := context.Background()
	step := func() {
		if err := errorsOf(each(comms, func(r int, c *Comm) error { return c.AllReduceSum(ctx, bufs[r]) })); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm up: connections, scratch, page faults
	b.SetBytes(int64(n) * 4)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		step()
	}
	secs := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	bytes := float64(n) * 4
	busbw := 2 * float64(world-1) / float64(world) * bytes / secs / 1e9
	copyBW := memcpyBandwidth(bufs[0], bufs[1])
	b.ReportMetric(busbw, "busbw_GB/s")
	b.ReportMetric(copyBW, "memcpy_GB/s")
	b.ReportMetric(busbw/copyBW, "busbw/memcpy")
}

// memcpyBandwidth is copy's bandwidth on buffers of this size (bytes read per
// second, the convention of memcpy benchmarks), the best of a few runs.
func memcpyBandwidth(dst, src []float32) float64 {
	best := 0.0
	for range 5 {
		start := time.Now()
		k := 0
		for time.Since(start) < 50*time.Millisecond || k < 2 {
			copy(dst, src)
			k++
		}
		bw := float64(k) * float64(len(src)) * 4 / time.Since(start).Seconds() / 1e9
		best = max(best, bw)
	}
	return best
}

func errorsOf(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
