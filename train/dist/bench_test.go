package dist

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAllReduce measures the ring all-reduce between ranks that are
// separate processes, as in a training run (this process is rank 0; the others
// are this test binary started again), over loopback TCP (tcp), over Unix
// sockets (unix), over the shared-memory rings that same-host ranks use by
// default (shm: each chunk copied into the ring and out of it), and with the
// buffers in the ranks' shared memory (direct: AllocShared, as the trainer's
// gradients are; the next rank reads each chunk in place), for 1, 10 and 100 MB
// buffers on 2 and 4 ranks. It reports the
// bus bandwidth (NCCL's busbw: 2(W-1)/W · bytes / time, what each link carries per
// second), the memcpy bandwidth of the same buffer measured in the same run, and
// their ratio (the goal: at least 0.5).
//
//	go test ./train/dist -run '^$' -bench BenchmarkAllReduce -benchtime 5x
func BenchmarkAllReduce(b *testing.B) {
	for _, transport := range []string{"tcp", "unix", "shm", "direct"} {
		for _, world := range []int{2, 4} {
			for _, mb := range []int{1, 10, 100} {
				b.Run(fmt.Sprintf("%s-w%d-%dMB", transport, world, mb), func(b *testing.B) {
					benchAllReduce(b, world, mb, transport)
				})
			}
		}
	}
}

// benchOptions are the communicator options of a benchmark transport.
func benchOptions(transport string) Options {
	return Options{Token: testToken, Timeout: time.Minute, TCPOnly: transport == "tcp", NoSharedMemory: transport == "unix"}
}

func benchAllReduce(b *testing.B, world, mb int, transport string) {
	n := mb << 20 / 4
	data := randomBufs(1, n, 1)[0]
	// memcpy's bandwidth on this buffer, before the ranks start and after they end
	// (the best: a 2-core machine has noisy moments).
	copyBW := memcpyBandwidth(make([]float32, n), data)
	_, port := startStore(b, world, ServerConfig{})
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var helpers []*exec.Cmd
	for r := 1; r < world; r++ {
		cmd := exec.Command(exe, "-test.run", "^TestBenchmarkRank$")
		cmd.Env = append(os.Environ(), "GPTKIT_DIST_BENCH="+fmt.Sprintf("%d,%d,%d,%d,%d,%s", r, world, port, n, b.N, transport))
		cmd.Stderr = os.Stderr // (its stdout, the test verdict, is dropped)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		helpers = append(helpers, cmd)
	}
	o := benchOptions(transport)
	o.Logger = testLogger(b)
	c, err := Init(context.Background(), Place{Rank: 0, World: world, MasterAddr: "127.0.0.1", MasterPort: port, StoreHostedByLauncher: true}, o)
	if err != nil {
		b.Fatal(err)
	}
	buf := benchBuffer(c, transport, data)
	defer c.FreeShared(buf)
	secs, err := timeAllReduces(c, buf, b.N)
	c.Close(err)
	for _, h := range helpers {
		if werr := h.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("a helper rank: %w", werr)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	bytes := float64(n) * 4
	busbw := 2 * float64(world-1) / float64(world) * bytes / secs / 1e9
	copyBW = max(copyBW, memcpyBandwidth(make([]float32, n), buf))
	b.ReportMetric(secs*1e9, "ns/allreduce")
	b.ReportMetric(busbw, "busbw_GB/s")
	b.ReportMetric(copyBW, "memcpy_GB/s")
	b.ReportMetric(busbw/copyBW, "busbw/memcpy")
}

// benchBuffer is data as the transport wants it: in shared memory for direct.
func benchBuffer(c *Comm, transport string, data []float32) []float32 {
	if transport != "direct" {
		return data
	}
	buf := c.AllocShared(len(data))
	copy(buf, data)
	return buf
}

// timeAllReduces runs one all-reduce to warm up (links, page faults) and a
// barrier, then times count all-reduces: the seconds of one.
func timeAllReduces(c *Comm, buf []float32, count int) (float64, error) {
	ctx := context.Background()
	if err := c.AllReduceSum(ctx, buf); err != nil {
		return 0, err
	}
	if err := c.Barrier(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for range count {
		if err := c.AllReduceSum(ctx, buf); err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds() / float64(count), nil
}

// TestBenchmarkRank is a helper rank of BenchmarkAllReduce (a no-op otherwise).
func TestBenchmarkRank(t *testing.T) {
	spec := os.Getenv("GPTKIT_DIST_BENCH")
	if spec == "" {
		t.Skip("a helper process of BenchmarkAllReduce")
	}
	var v [5]int
	var transport string
	parts := strings.Split(spec, ",")
	if len(parts) != 6 {
		t.Fatalf("GPTKIT_DIST_BENCH=%q", spec)
	}
	for i := range v {
		var err error
		if v[i], err = strconv.Atoi(parts[i]); err != nil {
			t.Fatal(err)
		}
	}
	transport = parts[5]
	rank, world, port, n, count := v[0], v[1], v[2], v[3], v[4]
	o := benchOptions(transport)
	o.Logger = testLogger(t)
	c, err := Init(context.Background(), Place{Rank: rank, World: world, MasterAddr: "127.0.0.1", MasterPort: port, StoreHostedByLauncher: true}, o)
	if err != nil {
		t.Fatal(err)
	}
	buf := benchBuffer(c, transport, randomBufs(1, n, uint64(rank+1))[0])
	_, err = timeAllReduces(c, buf, count)
	c.FreeShared(buf)
	c.Close(err)
	if err != nil {
		t.Fatal(err)
	}
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

// BenchmarkLoopbackTCP is the ceiling of the tcp transport on this machine: one
// TCP stream over loopback between two goroutines, 128 writes of 512 KiB (the
// ring's chunk) per op, in one direction (a ring link carries one direction; on a 2-rank ring
// both directions run at once, sharing the cores).
//
//	go test ./train/dist -run '^$' -bench BenchmarkLoopbackTCP
func BenchmarkLoopbackTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	chunk := make([]byte, DefaultChunkBytes)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		in := make([]byte, len(chunk))
		for range b.N * 128 {
			if _, err := io.ReadFull(c, in); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.SetBytes(128 * int64(len(chunk)))
	b.ResetTimer()
	for range b.N * 128 {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
