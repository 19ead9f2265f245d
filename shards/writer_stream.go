package shards

import (
	"fmt"
	"math"
)

// maxDocTokens is the most tokens one document may have: an .idx keeps each
// sequence's size as an int32.
const maxDocTokens = math.MaxInt32

// appendStreamed appends ids to the document being streamed, beginning one if none
// is: its tokens go to the .bin as they come, through the Writer's buffer, so that a
// document larger than memory never needs to be held whole (Import of a file without
// splitting at EOD). endStreamed ends the document. Unlike AddDocument's, a bad id or a
// document grown past maxDocTokens is sticky: the .bin already holds part of the
// document, so only Abort is left.
func (w *Writer) appendStreamed(ids []int) error {
	if w.done {
		return fmt.Errorf("shards: %s: add document: %w", w.prefix, ErrClosed)
	}
	if w.err != nil || len(ids) == 0 {
		return w.err
	}
	if w.streamToks+int64(len(ids)) > maxDocTokens {
		w.err = fmt.Errorf("shards: %s: document %d has more than %d tokens, more than an .idx size (int32) holds: %w",
			w.prefix, len(w.sizes), maxDocTokens, ErrTokenRange)
		return w.err
	}
	w.streaming = true
	item := w.dtype.Size()
	for rest := ids; len(rest) > 0 && w.err == nil; {
		room := (cap(w.buf) - len(w.buf)) / item
		if room == 0 {
			w.flush()
			continue
		}
		chunk := rest[:min(room, len(rest))]
		at := len(w.buf)
		w.buf = w.buf[:at+len(chunk)*item]
		if bad := encodeTokens(w.buf[at:], chunk, w.dtype); bad >= 0 {
			w.err = fmt.Errorf("shards: %s: document %d, token %d: id %d does not fit %s (0..%d): %w",
				w.prefix, len(w.sizes), w.streamToks+int64(len(ids)-len(rest)+bad), chunk[bad], w.dtype, w.dtype.MaxID(), ErrTokenRange)
			return w.err
		}
		rest = rest[len(chunk):]
	}
	if w.err != nil {
		return w.err
	}
	w.streamToks += int64(len(ids))
	return nil
}

// endStreamed ends the document appendStreamed began (a no-op when none was begun).
func (w *Writer) endStreamed() error {
	if w.err != nil || !w.streaming {
		return w.err
	}
	w.sizes = append(w.sizes, int32(w.streamToks))
	if w.docIdx != nil {
		w.docIdx = append(w.docIdx, int64(len(w.sizes)))
	}
	w.tokens += w.streamToks
	w.streaming, w.streamToks = false, 0
	return nil
}
