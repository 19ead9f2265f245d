package tokenize

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// A text of 2 × batchSplitMin bytes or more, and over half a worker's share of its
// batch, is encoded by EncodeBatch in parts (Cut), so that one large text uses every
// worker: parts of its length over 2 × workers, at least batchSplitMin and at most
// batchPartMax bytes. (Variables for the tests, which lower them.)
var (
	batchSplitMin = 1 << 20
	batchPartMax  = 8 << 20
)

// The parts of a cut text are encoded straight into one array of ids, each into a
// region of its own (batchRegions), so that joining them moves ids within memory
// already faulted in instead of copying them all into new memory (a copy that cost
// ~25% more CPU than Encode of the text). Under BPE a region holds the part's bytes ×
// the ids per byte of the part's samples (one of sampleSpotBytes every batchSampleEvery
// bytes, at least one; ~0.8% of the work) or of all the text's, whichever is higher, ×
// batchSlack, and batchRegionExtra ids more. Spare room is address space: memory never
// written is never faulted in. (Variables for the tests, which shrink the regions so
// that parts overflow them.)
var (
	batchSampleEvery = 2 << 20
	batchSlack       = sampleSlack
	batchRegionExtra = 16
)

// batchJob is one text of a batch, or one part of it.
type batchJob struct {
	text       int // index in the batch
	start, end int // the part's bytes
	part       int // index among the text's parts (-1: the text is one part)
}

// cutText is a text of a batch encoded in parts into the regions of one array of ids.
// As the parts end, in any order, the worker that ends one moves each part whose
// predecessors have all ended to its place in the result (at or before its region's
// start, the regions holding spare room), while the other workers encode later parts:
// what is left to join once the last part ends is most often the move of that part. A
// part whose ids overflowed its region (the encoder grew them into new memory), or
// whose place lies after its region's start (a part before it overflowed), is put in
// place at the end (join).
type cutText struct {
	ids    []int   // the array, len = cap
	region []int   // where part k's region starts
	parts  [][]int // part k's ids: in its region, in its place, or in new memory
	place  []int   // where part k's ids go in the result (from next's predecessors)
	placed []bool  // part k's ids are in their place

	mu     sync.Mutex
	done   []bool // part k is encoded
	next   int    // the parts before next have a place (and are placed, or left for the end)
	at     int    // the place of part next
	moving bool   // a worker is placing parts
}

// EncodeBatch encodes texts on up to workers goroutines (0 means GOMAXPROCS) and
// returns their ids in input order. A text of 2 MB or more that would keep one worker
// busy while the others wait is cut into parts where the tokenizer allows it (Cut),
// encoded on several workers into one array and joined: the ids are those of Encode of
// the whole text.
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
	jobs, cuts := t.batchJobs(texts, workers)
	if cuts != nil {
		t.batchRegions(texts, jobs, cuts, workers)
	}
	runJobs(min(workers, len(jobs)), len(jobs), func(i int) {
		j := jobs[i]
		if j.part < 0 {
			out[j.text] = t.Encode(texts[j.text])
			return
		}
		c := cuts[j.text]
		ids, _ := encode[int](t, texts[j.text][j.start:j.end], c.parts[j.part], false, false)
		c.ended(j.part, ids)
	})
	for i, c := range cuts {
		if c != nil {
			out[i] = c.join(t.kind)
		}
	}
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

// batchJobs lists the jobs of a batch and the cut texts, the parts of each large text
// that Cut allows cutting in order (cuts[i] nil: text i is one job; cuts nil: no text
// is cut). Only a text over half a worker's share of the batch is cut: others keep the
// workers busy as they are, and joining parts costs moving most of their ids
// (BenchmarkEncodeBatchWorkers/one-text).
func (t *Tokenizer) batchJobs(texts []string, workers int) ([]batchJob, []*cutText) {
	total := 0
	for _, s := range texts {
		total += len(s)
	}
	jobs := make([]batchJob, 0, len(texts))
	var cuts []*cutText
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
		n := len(jobs) - first
		if n == 1 {
			jobs[first].part = -1 // no place to cut
			continue
		}
		if cuts == nil {
			cuts = make([]*cutText, len(texts))
		}
		cuts[i] = &cutText{
			region: make([]int, n), parts: make([][]int, n), place: make([]int, n),
			placed: make([]bool, n), done: make([]bool, n),
		}
	}
	return jobs, cuts
}

// batchRegions sizes the regions of the cut texts' parts and makes each text's array:
// for BPE from samples of the text, encoded on the workers; for a character vocabulary
// from each part's characters, counted on the workers (an id at most each: an unknown
// one has none, and an ill-formed sequence becomes one U+FFFD); for the byte vocabulary
// an id a byte (more only where invalid UTF-8 is replaced).
func (t *Tokenizer) batchRegions(texts []string, jobs []batchJob, cuts []*cutText, workers int) {
	type sample struct{ text, part, start, end, ids int }
	var samples []sample
	for _, j := range jobs {
		switch {
		case j.part < 0:
		case t.kind == KindChar:
			samples = append(samples, sample{text: j.text, part: j.part, start: j.start, end: j.end})
		case t.kind == KindBPE:
			s, part := texts[j.text], j.end-j.start
			n := max(part/batchSampleEvery, 1)
			size := min(sampleSpotBytes, part/(4*n))
			for k := range n {
				at := j.start + part/n*k
				for at < len(s) && !utf8.RuneStart(s[at]) {
					at++
				}
				end := min(at+size, len(s))
				for end < len(s) && !utf8.RuneStart(s[end]) {
					end++
				}
				samples = append(samples, sample{text: j.text, part: j.part, start: at, end: end})
			}
		}
	}
	runJobs(min(workers, len(samples)), len(samples), func(i int) {
		sp := &samples[i]
		s := texts[sp.text][sp.start:sp.end]
		if t.kind == KindChar {
			sp.ids = utf8.RuneCountInString(s)
			return
		}
		ids, _ := encode[int](t, s, makeIDs[int](len(s)+16), false, false)
		sp.ids = len(ids)
	})
	// The ids per byte of each text's samples and of each part's.
	type rate struct{ ids, bytes int }
	textRate := make([]rate, len(texts))
	partRate := make([][]rate, len(texts))
	for i, c := range cuts {
		if c != nil {
			partRate[i] = make([]rate, len(c.parts))
		}
	}
	for _, sp := range samples {
		textRate[sp.text].ids += sp.ids
		textRate[sp.text].bytes += sp.end - sp.start
		partRate[sp.text][sp.part].ids += sp.ids
		partRate[sp.text][sp.part].bytes += sp.end - sp.start
	}
	perByte := func(r rate) float64 { return float64(r.ids) / float64(max(r.bytes, 1)) }
	size := make([]int, len(texts)) // of each cut text's array: its regions so far
	for _, j := range jobs {
		if j.part < 0 {
			continue
		}
		ids := j.end - j.start
		switch t.kind {
		case KindBPE:
			r := max(perByte(textRate[j.text]), perByte(partRate[j.text][j.part]))
			ids = int(float64(ids) * r * batchSlack)
		case KindChar:
			ids = partRate[j.text][j.part].ids
		}
		cuts[j.text].region[j.part] = size[j.text]
		size[j.text] += max(ids+batchRegionExtra, 1)
	}
	for i, c := range cuts {
		if c == nil {
			continue
		}
		c.ids = makeIDs[int](size[i])[:size[i]]
		for k := range c.parts {
			end := size[i]
			if k+1 < len(c.parts) {
				end = c.region[k+1]
			}
			c.parts[k] = c.ids[c.region[k]:c.region[k]:end]
		}
	}
}

// inRegion reports whether ids lie in part k's region.
func (c *cutText) inRegion(k int, ids []int) bool {
	return unsafe.SliceData(ids) == &c.ids[c.region[k]]
}

// ended records part k's ids and, unless another worker is at it, places the parts
// whose predecessors have all ended: each in its region whose place is there or before
// (moved there, ahead of the rest of the array). Such a move writes only before the end
// of the part's own region, never into a region still being encoded, and never over the
// ids of a part left for the end (whose place is after its region).
func (c *cutText) ended(k int, ids []int) {
	c.mu.Lock()
	c.parts[k], c.done[k] = ids, true
	if c.moving {
		c.mu.Unlock()
		return
	}
	c.moving = true
	for c.next < len(c.parts) && c.done[c.next] {
		k, at, ids := c.next, c.at, c.parts[c.next]
		c.place[k] = at
		c.next, c.at = c.next+1, c.at+len(ids)
		c.mu.Unlock()
		placed := false
		if c.inRegion(k, ids) && at <= c.region[k] {
			copy(c.ids[at:], ids)
			ids, placed = c.ids[at:at+len(ids)], true
		}
		c.mu.Lock()
		c.parts[k], c.placed[k] = ids, placed
	}
	c.moving = false
	c.mu.Unlock()
}

// join puts the parts left for the end in place (called once all parts have ended) and
// returns the text's ids, with spare room as Encode leaves it: first the parts whose
// place lies after their region's start, from the last (a place starts after the ids of
// every such part before it, and ends before the ids of the next part still to move),
// then the parts in new memory. Where the ids outgrew the array, they are copied into a
// new one.
func (c *cutText) join(kind Kind) []int {
	n := c.at
	if n == 0 && kind == KindChar {
		return nil // Encode's: a character vocabulary's ids are appended to nil
	}
	if n > len(c.ids) {
		out := makeIDs[int](n)[:n] // not cleared: every element is written below
		for k, p := range c.parts {
			copy(out[c.place[k]:], p)
		}
		return out
	}
	for k := len(c.parts) - 1; k >= 0; k-- {
		if p := c.parts[k]; !c.placed[k] && c.inRegion(k, p) {
			copy(c.ids[c.place[k]:], p)
		}
	}
	for k, p := range c.parts {
		if !c.placed[k] && !c.inRegion(k, p) {
			copy(c.ids[c.place[k]:], p)
		}
	}
	out := c.ids[:n]
	if spare := n/16 + 1024; cap(out)-n > spare {
		out = out[: n : n+spare]
	}
	clear(out[n:cap(out)])
	return out
}
