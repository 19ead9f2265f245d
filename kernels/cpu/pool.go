package cpu

import (
	"sync"
	"sync/atomic"
)

// pool is a small persistent set of worker goroutines. run(n, fn) calls
// fn(worker, task) for every task in [0, n), spread over the calling goroutine
// (worker 0) and the helpers, and returns when all are done.
//
// Tasks are handed out dynamically (an atomic counter), so which worker runs a
// task varies from call to call; kernels therefore make a task's result depend
// only on the task index, never on the worker, and use the worker index only to
// pick scratch memory. That is what keeps results independent of the thread
// count.
//
// Spawning goroutines per call costs a few microseconds each, which matters for
// the many small ops of a small model; parked helpers cost one channel send.
type pool struct {
	threads int
	wake    []chan *job // one per helper (workers 1..threads-1)
}

type job struct {
	fn   func(worker, task int)
	n    int
	next atomic.Int64
	wg   sync.WaitGroup
}

func newPool(threads int) *pool {
	p := &pool{threads: threads}
	for w := 1; w < threads; w++ {
		ch := make(chan *job)
		p.wake = append(p.wake, ch)
		go helper(ch, w)
	}
	return p
}

func helper(ch chan *job, w int) {
	for j := range ch {
		j.work(w)
		j.wg.Done()
	}
}

func (j *job) work(w int) {
	for {
		t := int(j.next.Add(1) - 1)
		if t >= j.n {
			return
		}
		j.fn(w, t)
	}
}

// run calls fn(worker, task) for task in [0, n) on up to p.threads workers.
// Callers serialise runs (the backend's mutex): helpers and scratch are shared.
func (p *pool) run(n int, fn func(worker, task int)) {
	if n <= 0 {
		return
	}
	helpers := min(p.threads, n) - 1
	if helpers == 0 {
		for t := 0; t < n; t++ {
			fn(0, t)
		}
		return
	}
	j := &job{fn: fn, n: n}
	j.wg.Add(helpers)
	for w := 0; w < helpers; w++ {
		p.wake[w] <- j
	}
	j.work(0)
	j.wg.Wait()
}

// close stops the helpers (when the backend is garbage collected).
func (p *pool) close() {
	for _, ch := range p.wake {
		close(ch)
	}
}
