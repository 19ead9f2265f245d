package dist

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkAllReduceCeiling is what the data movement of a 2-rank all-reduce
// costs on this machine with no protocol at all: two threads pinned to CPUs 0 and
// 1, each holding its buffer, exchange halves as the direct transport does (each
// adds the other's half of its segment into its own with the ring's AVX2 add,
// then copies the other's reduced segment), meeting at spin barriers between the
// phases. Its busbw bounds what any 2-rank all-reduce on one host can reach here,
// and shows how much of memcpy's bandwidth crossing between cores costs.
//
//	go test ./train/dist -run '^$' -bench BenchmarkAllReduceCeiling -benchtime 30x
func BenchmarkAllReduceCeiling(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	for _, mb := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("w2-%dMB", mb), func(b *testing.B) {
			n := mb << 20 / 4
			bufs := randomBufs(2, n, 1)
			copyBW := memcpyBandwidth(make([]float32, n), bufs[0])
			var arrived [2]atomic.Int64
			barrier := func(r int, round int64) {
				arrived[r].Store(round)
				for arrived[1-r].Load() < round {
				}
			}
			var wg sync.WaitGroup
			var elapsed [2]time.Duration
			for r := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var set unix.CPUSet
					set.Set(r)
					if err := unix.SchedSetaffinity(0, &set); err != nil {
						b.Error(err)
						return
					}
					own, peer := bufs[r], bufs[1-r]
					mine, theirs := own[r*n/2:(r+1)*n/2], own[(1-r)*n/2:(2-r)*n/2]
					round := int64(0)
					step := func() {
						add(mine, peer[r*n/2:(r+1)*n/2])
						round++
						barrier(r, round)
						copy(theirs, peer[(1-r)*n/2:(2-r)*n/2])
						round++
						barrier(r, round)
					}
					step() // warm up
					start := time.Now()
					for range b.N {
						step()
					}
					elapsed[r] = time.Since(start)
				}()
			}
			wg.Wait()
			secs := max(elapsed[0], elapsed[1]).Seconds() / float64(b.N)
			busbw := float64(n) * 4 / secs / 1e9
			b.ReportMetric(secs*1e9, "ns/allreduce")
			b.ReportMetric(busbw, "busbw_GB/s")
			b.ReportMetric(copyBW, "memcpy_GB/s")
			b.ReportMetric(busbw/copyBW, "busbw/memcpy")
		})
	}
}
