package tokenize

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A text of 2 × batchSplitMin bytes or more, and over half a worker's share of its
// batch, is encoded by EncodeBatch in parts (Cut), so that one large text uses every
// worker: parts of its length over 2 × workers, at least batchSplitMin and at most
// batchPartMax bytes. (Variables for the tests, which lower them.)
var (
	batchSplitMin = 1 << 20
	batchPartMax  = 8 << 20
)

// batchJob is one text of a batch, or one part of it.
type batchJob struct {
	text       int // index in the batch
	start, end int // the part's bytes
	part       int // index among the text's parts (-1: the text is one part)
}

// EncodeBatch encodes texts on up to workers goroutines (0 means GOMAXPROCS) and
// returns their ids in input order. A text of 2 MB or more that would keep one worker
// busy while the others wait is cut into parts where the tokenizer allows it (Cut),
// encoded on several workers and joined: the ids are those of Encode of the whole text.
func (t *Tokenizer) EncodeBatch(texts []string, workers int) [][]int {
	out := make([][]int, len(texts))
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers <= 1 {
		for i, s := range texts {
			out[i] = t.Encode(s)
		}
		return out
	}
	jobs, parts := t.batchJobs(texts, workers)
	runJobs(min(workers, len(jobs)), len(jobs), func(i int) {
		j := jobs[i]
		if j.part < 0 {
			out[j.text] = t.Encode(texts[j.text])
			return
		}
		// A new slice, sized as Encode sizes one (from the state's last text,
		// most often the part before; a part of 4 MB or more from samples).
		ids, _ := encode[int](t, texts[j.text][j.start:j.end], nil, false, false)
		parts[j.text][j.part] = ids
	})
	if parts == nil {
		return out
	}
	// Join each cut text's parts: the copies on the workers too.
	type copyJob struct {
		dst []int
		src []int
	}
	var copies []copyJob
	for i, ps := range parts {
		if ps == nil {
			continue
		}
		n := 0
		for _, p := range ps {
			n += len(p)
		}
		if n == 0 && t.kind == KindChar {
			continue // Encode's nil: a character vocabulary's ids are appended to nil
		}
		out[i] = makeIDs[int](n)[:n] // not cleared: every element is written below
		at := 0
		for _, p := range ps {
			copies = append(copies, copyJob{out[i][at : at+len(p)], p})
			at += len(p)
		}
	}
	runJobs(min(workers, len(copies)), len(copies), func(i int) {
		c := copies[i]
		copy(c.dst, c.src)
	})
	return out
}

// runJobs calls f(0) to f(n-1) on workers goroutines.
func runJobs(workers, n int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// batchJobs lists the jobs of a batch, the parts of each large text that Cut allows
// cutting in order, and makes room for the parts' ids (parts[i] nil: text i is one job).
// Only a text over half a worker's share of the batch is cut: others keep the workers
// busy as they are, and joining parts costs a copy of their ids (~20% more CPU for the
// text; BenchmarkEncodeBatchWorkers/one-text).
func (t *Tokenizer) batchJobs(texts []string, workers int) ([]batchJob, [][][]int) {
	total := 0
	for _, s := range texts {
		total += len(s)
	}
	jobs := make([]batchJob, 0, len(texts))
	var parts [][][]int
	for i, s := range texts {
		if len(s) < 2*batchSplitMin || len(s) <= total/(2*workers) {
			jobs = append(jobs, batchJob{text: i, part: -1})
			continue
		}
		size := min(max(len(s)/(2*workers), batchSplitMin), batchPartMax)
		first := len(jobs)
		for start := 0; start < len(s); {
			end := len(s)
			if start+size < len(s) {
				if p := t.Cut(s, start+size, len(s)); p > 0 {
					end = p
				}
			}
			jobs = append(jobs, batchJob{text: i, start: start, end: end, part: len(jobs) - first})
			start = end
		}
		if len(jobs)-first == 1 {
			jobs[first].part = -1 // no place to cut
			continue
		}
		if parts == nil {
			parts = make([][][]int, len(texts))
		}
		parts[i] = make([][]int, len(jobs)-first)
	}
	return jobs, parts
}
