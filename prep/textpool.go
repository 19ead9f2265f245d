package prep

import (
	"sync"

	"gptkit/internal/hugemem"
)

// TextPool lets ReadBatches and ReadRangeBatches reuse the arrays that hold the decoded
// texts of JSONL strings (ReadOptions.TextPool): each batch's texts then go into arrays
// of its own, which Release hands back for the batches to come once its caller is done
// with the texts. A fresh array per batch was cleared by the allocator, faulted in and
// collected.
//
// The zero TextPool is ready to use; it may be shared by goroutines.
type TextPool struct {
	mu   sync.Mutex
	free [][]byte
	held map[*Doc][][]byte // a batch's arrays by its first document
}

// maxPooledArrays bounds the arrays a pool keeps for reuse (those handed back beyond it
// are left to the collector): the batches in flight hold the rest.
const maxPooledArrays = 64

// Release hands back the arrays of batch, a batch that ReadBatches or ReadRangeBatches
// passed to its callback with this pool. After it, the texts of batch must not be read
// again (their lengths, held in the Doc, may). Releasing a batch twice, or one without
// arrays of its own, does nothing.
func (p *TextPool) Release(batch []Doc) {
	if p == nil || len(batch) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	arrays := p.held[&batch[0]]
	delete(p.held, &batch[0])
	for _, a := range arrays {
		if len(p.free) < maxPooledArrays {
			p.free = append(p.free, a[:0])
		}
	}
}

// get returns an array of textArenaSize to decode into, a released one if there is one.
func (p *TextPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		a := p.free[n-1]
		p.free = p.free[:n-1]
		return a
	}
	return hugemem.Make[byte](textArenaSize)[:0]
}

// hold records arrays as those of batch, until Release.
func (p *TextPool) hold(batch []Doc, arrays [][]byte) {
	if len(batch) == 0 || len(arrays) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(map[*Doc][][]byte)
	}
	p.held[&batch[0]] = arrays
}
