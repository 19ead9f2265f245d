package train

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gptkit/kernels/cpu"
	"gptkit/train/dist"
)

// dpBenchTrainer is a Trainer of rank coll.Rank() on the CPU backend over random
// data, laid out for data parallelism as NewTrainer does.
func dpBenchTrainer(b *testing.B, cfg Config, vocab int, coll Collectives) *Trainer {
	return bareTrainer(b, cpu.New(cfg.Threads), cfg, vocab, coll)
}

// timedComm is a rank's communicator that sums the wall time spent in its
// collectives (its shared memory stays visible to the trainer).
type timedComm struct {
	*dist.Comm
	spent *atomic.Int64 // nanoseconds
}

func (c timedComm) time(f func() error) error {
	start := time.Now()
	err := f()
	c.spent.Add(int64(time.Since(start)))
	return err
}

func (c timedComm) AllReduceSum(ctx context.Context, buf []float32) error {
	return c.time(func() error { return c.Comm.AllReduceSum(ctx, buf) })
}

func (c timedComm) AllReduceAvg(ctx context.Context, buf []float32) error {
	return c.time(func() error { return c.Comm.AllReduceAvg(ctx, buf) })
}

func (c timedComm) ReduceScatterSum(ctx context.Context, buf []float32) error {
	return c.time(func() error { return c.Comm.ReduceScatterSum(ctx, buf) })
}

func (c timedComm) AllGather(ctx context.Context, buf []float32) error {
	return c.time(func() error { return c.Comm.AllGather(ctx, buf) })
}

func (c timedComm) Broadcast(ctx context.Context, buf []float32, root int) error {
	return c.time(func() error { return c.Comm.Broadcast(ctx, buf, root) })
}

func (c timedComm) Barrier(ctx context.Context) error {
	return c.time(func() error { return c.Comm.Barrier(ctx) })
}

// BenchmarkDataParallelStep measures the per-step cost of data parallelism with 2
// ranks (goroutines of this process, one kernel thread each, linked by the dist
// ring over loopback) against one rank with the same per-rank batch: a model of
// 4 layers, 256 wide (3.3M parameters: a 13 MB gradient), B=8, T=64. It reports
// ms/step, the overhead per step over one rank, and the time the step waited for
// gradient buckets after the backward pass (the communication not hidden behind
// it), and the wall time per step a rank spends inside collectives (coll_ms:
// for bucket 1MB most of it overlaps the backward). On a machine with fewer free
// cores than ranks (or two vCPUs that share a core) the wall-clock overhead
// includes the ranks' compute slowing each other down; coll_ms does not, and the
// CPU time per rank per step (getrusage) and its excess over one rank's show it.
// Variants: one all-reduce after the backward (bucket 0), 1 MB buckets
// overlapping the backward, and ZeRO-1.
//
//	go test ./train -run '^$' -bench BenchmarkDataParallelStep -benchtime 20x
func BenchmarkDataParallelStep(b *testing.B) {
	cfg := Default()
	cfg.NLayer, cfg.NHead, cfg.NEmbd, cfg.BlockSize = 4, 4, 256, 64
	cfg.BatchSize, cfg.GradAccum, cfg.Dropout, cfg.Threads = 8, 1, 0, 1
	cfg.LR, cfg.MinLR, cfg.WarmupSteps, cfg.LRDecaySteps = 1e-3, 1e-4, 10, 1000
	const vocab = 512

	// single returns one rank's wall time and CPU time per step.
	single := func() (time.Duration, float64) {
		t := dpBenchTrainer(b, cfg, vocab, Single{})
		ctx := context.Background()
		t.trainStep(ctx)
		cpu0 := cpuSeconds()
		start := time.Now()
		for range b.N {
			if _, err := t.trainStep(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / time.Duration(b.N), (cpuSeconds() - cpu0) / float64(b.N)
	}
	for _, v := range []struct {
		name     string
		bucketMB float64
		zero     int
	}{{"w1", 0, 0}, {"w2-bucket0", 0, 0}, {"w2-bucket1MB", 1, 0}, {"w2-zero1", 0, 1}} {
		b.Run(v.name, func(b *testing.B) {
			if v.name == "w1" {
				wall, cpu := single()
				b.ReportMetric(float64(wall.Microseconds())/1000, "ms/step")
				b.ReportMetric(cpu*1000, "cpu_ms/step/rank")
				return
			}
			c := cfg
			c.BucketMB, c.Zero = v.bucketMB, v.zero
			comms := startComms(b, 2)
			var spent atomic.Int64
			for r := range comms {
				comms[r] = timedComm{Comm: comms[r].(*dist.Comm), spent: &spent}
			}
			ts := []*Trainer{dpBenchTrainer(b, c, vocab, comms[0]), dpBenchTrainer(b, c, vocab, comms[1])}
			steps := func(n int) {
				var wg sync.WaitGroup
				for _, t := range ts {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							if _, err := t.trainStep(context.Background()); err != nil {
								panic(fmt.Sprint(err))
							}
						}
					}()
				}
				wg.Wait()
			}
			steps(1)
			ts[0].commWait = 0
			spent.Store(0)
			b.ResetTimer()
			cpu0 := cpuSeconds()
			start := time.Now()
			steps(b.N)
			per := time.Since(start) / time.Duration(b.N)
			cpu := (cpuSeconds() - cpu0) / float64(b.N) / 2
			b.StopTimer()
			one, oneCPU := single()
			b.ReportMetric(float64(per.Microseconds())/1000, "ms/step")
			b.ReportMetric(float64(spent.Load())/1e6/2/float64(b.N), "coll_ms/step/rank")
			b.ReportMetric(cpu*1000, "cpu_ms/step/rank")
			b.ReportMetric((cpu-oneCPU)*1000, "comm_cpu_ms/step/rank")
			b.ReportMetric(float64((per-one).Microseconds())/1000, "overhead_ms/step")
			b.ReportMetric(float64(per-one)/float64(per)*100, "overhead_%")
			if v.bucketMB > 0 {
				b.ReportMetric(float64(ts[0].commWait.Microseconds())/1000/float64(b.N), "bucket_wait_ms/step")
			}
		})
	}
}
