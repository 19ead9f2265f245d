package main

import "gptkit/internal/hugemem"

// idBlockBytes is the size of an output block of `tokenize encode` (one text): a huge
// page.
const idBlockBytes = 2 << 20

// idBlocks is the pool of blocks the workers of encodeWhole write a part's ids into as
// text, and the writer hands back once it has written them. The blocks are mapped
// (hugemem.Mapped), of one size, and reused by any part, so the memory they fault in is
// what the parts in flight hold at most. Before, each part's text went into a buffer
// sized for it, made again whenever a larger part came (the parts of the mixed corpus
// are 1-3.7 MB between the places Cut allows), and each was cleared by make over its
// whole size as the heap reused memory, then faulted in again: 100 MB of that corpus
// made 19 buffers and 5 arrays of ids; now 18 blocks and 2 arrays, and the command
// takes 17-21% less CPU (docs/tokenizer-performance.md, "The command line against the
// library").
type idBlocks struct {
	free chan *hugemem.Mapped[byte]
}

// idBlock is a block and the ids' text in it.
type idBlock struct {
	mem  *hugemem.Mapped[byte]
	text []byte // in mem.S, or on the heap where an id's text outgrew it
}

// idBlocksKept is how many free blocks the pool keeps; more are unmapped.
const idBlocksKept = 64

func newIDBlocks() *idBlocks {
	return &idBlocks{free: make(chan *hugemem.Mapped[byte], idBlocksKept)}
}

// get returns a free block, or maps one.
func (p *idBlocks) get() *hugemem.Mapped[byte] {
	select {
	case m := <-p.free:
		return m
	default:
		return hugemem.MapUnwritten[byte](idBlockBytes)
	}
}

// put hands a block back.
func (p *idBlocks) put(m *hugemem.Mapped[byte]) {
	select {
	case p.free <- m:
	default:
		m.Unmap()
	}
}

// putAll hands back the blocks of a result that is not written.
func (p *idBlocks) putAll(blocks []idBlock) {
	for _, b := range blocks {
		p.put(b.mem)
	}
}

// format writes ids as text (",id,id...") into blocks from the pool, each filled with
// as many as fit.
func (p *idBlocks) format(ft *idText, ids []int32) []idBlock {
	var blocks []idBlock
	for len(ids) > 0 {
		m := p.get()
		text, done := appendIDsFit(ft, m.S[:0], ids)
		blocks = append(blocks, idBlock{m, text})
		ids = ids[done:]
	}
	return blocks
}

// release unmaps the free blocks; those still in results are the caller's to put back
// first.
func (p *idBlocks) release() {
	for {
		select {
		case m := <-p.free:
			m.Unmap()
		default:
			return
		}
	}
}
