package shards

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"

	"gptkit/storage"
)

// ShardInfo describes one committed shard; it is also the manifest's shard entry.
type ShardInfo struct {
	// Prefix names the shard's files, PREFIX.bin and PREFIX.idx. The Writer sets the store
	// key it wrote; in a manifest it is relative to the manifest's directory.
	Prefix string `json:"prefix"`
	// Split is the dataset split the shard belongs to in a manifest ("train", "val",
	// "test", ...); empty means the training data of an unsplit dataset. The Writer
	// leaves it empty.
	Split     string `json:"split,omitempty"`
	Documents int64  `json:"documents"` // sequences (one per document for our writer)
	Tokens    int64  `json:"tokens"`
	BinSHA256 string `json:"bin_sha256"` // lowercase hex
	IdxSHA256 string `json:"idx_sha256"`
	// Stripe, in a part of a partitioned run, marks a shard that holds documents of
	// one stripe of an input the run's parts share (see StripeInfo); nil otherwise.
	// The Writer leaves it nil.
	Stripe *StripeInfo `json:"stripe,omitempty"`
}

// writeBufSize is how many token bytes the Writer converts before handing them to the
// store: big calls to sha256 and the store, small enough that the bytes are still in
// the L2 cache when hashed. Inside `tokenize run` (the tokenizers' tables filling the
// caches), 1 MiB made sha256 ~18% dearer than 256 KiB.
const writeBufSize = 256 << 10

// Writer writes one shard, PREFIX.bin and PREFIX.idx, through a storage.Store, as GPT-NeoX's
// preprocess_data.py does: one sequence and one document per AddDocument, so
// doc_idx = [0, 1, ..., n]. The .bin streams out as documents arrive; the sizes stay in
// memory (4 bytes per document) until Close writes the .idx.
//
// Nothing is visible until Close succeeds: Close commits the .bin and then the .idx, so an
// .idx never points at a missing .bin. A Writer is not safe for concurrent use.
type Writer struct {
	ctx    context.Context
	st     storage.Store
	prefix string
	dtype  DType

	bin     storage.Writer
	binHash hash.Hash
	buf     []byte // converted tokens not yet written; cap writeBufSize

	sizes  []int32
	docIdx []int64 // nil: one document per sequence
	tokens int64

	streaming  bool  // a document is being streamed (appendStreamed), not yet ended
	streamToks int64 // its tokens so far

	err  error // sticky: the first write error
	done bool  // Close or Abort was called
}

// NewWriter starts a shard at the store keys prefix+".bin" and prefix+".idx". dtype must
// be Uint16 or Int32 (DTypeForVocab picks like GPT-NeoX).
func NewWriter(ctx context.Context, st storage.Store, prefix string, dtype DType) (*Writer, error) {
	if !dtype.writable() {
		return nil, fmt.Errorf("shards: new writer %s: %w: %s (the writer produces uint16 or int32, as GPT-NeoX does)", prefix, ErrBadDType, dtype)
	}
	bin, err := st.Create(ctx, prefix+".bin")
	if err != nil {
		return nil, fmt.Errorf("shards: create %s.bin in %s: %w", prefix, st, err)
	}
	return &Writer{
		ctx: ctx, st: st, prefix: prefix, dtype: dtype,
		bin: bin, binHash: sha256.New(), buf: make([]byte, 0, writeBufSize),
	}, nil
}

// DType is the shard's token type.
func (w *Writer) DType() DType { return w.dtype }

// Documents is the number of documents added so far.
func (w *Writer) Documents() int64 { return int64(len(w.sizes)) }

// Tokens is the number of tokens added so far.
func (w *Writer) Tokens() int64 { return w.tokens }

// AddDocument appends one document. An id that does not fit the dtype (negative, or above
// 65535 for uint16) is an ErrTokenRange error naming the document and the id; the document
// is then not written and the Writer stays usable. Write errors are sticky.
func (w *Writer) AddDocument(ids []int) error { return addDocument(w, ids) }

// AddDocumentInt32 appends one document whose ids are those of parts, one after the
// other, as AddDocument does: for callers that hold ids as int32 (half the memory of
// int), and a long document in parts rather than in one slice.
func (w *Writer) AddDocumentInt32(parts ...[]int32) error { return addDocument(w, parts...) }

// tokenID is an id type the writer takes.
type tokenID interface{ ~int | ~int32 }

func addDocument[T tokenID](w *Writer, parts ...[]T) error {
	if w.done {
		return fmt.Errorf("shards: %s: add document: %w", w.prefix, ErrClosed)
	}
	if w.err != nil {
		return w.err
	}
	if w.streaming {
		return fmt.Errorf("shards: %s: add document: document %d is being streamed and was not ended", w.prefix, len(w.sizes))
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("shards: %s: document %d has %d tokens, more than an .idx size (int32) holds: %w",
			w.prefix, len(w.sizes), n, ErrTokenRange)
	}
	item := w.dtype.Size()
	need := n * item
	if need > cap(w.buf)-len(w.buf) && need <= cap(w.buf) {
		w.flush()
	}
	if need <= cap(w.buf)-len(w.buf) {
		// Common case: convert and check in one pass, roll back on a bad id.
		start := len(w.buf)
		for k, ids := range parts {
			at := len(w.buf)
			w.buf = w.buf[:at+len(ids)*item]
			if bad := encodeTokens(w.buf[at:], ids, w.dtype); bad >= 0 {
				w.buf = w.buf[:start]
				return rangeErr(w, parts, k, bad)
			}
		}
	} else {
		// A document bigger than the buffer: check it all first, then stream it.
		for k, ids := range parts {
			if bad := checkTokens(ids, w.dtype); bad >= 0 {
				return rangeErr(w, parts, k, bad)
			}
		}
		w.flush()
		per := cap(w.buf) / item
		for _, rest := range parts {
			for len(rest) > 0 && w.err == nil {
				chunk := rest[:min(per-len(w.buf)/item, len(rest))]
				rest = rest[len(chunk):]
				at := len(w.buf)
				w.buf = w.buf[:at+len(chunk)*item]
				encodeTokens(w.buf[at:], chunk, w.dtype)
				if len(w.buf) == cap(w.buf) {
					w.flush()
				}
			}
		}
		w.flush()
	}
	if w.err != nil {
		return w.err
	}
	w.sizes = append(w.sizes, int32(n))
	if w.docIdx != nil {
		w.docIdx = append(w.docIdx, int64(len(w.sizes)))
	}
	w.tokens += int64(n)
	return nil
}

// rangeErr is the error for id bad of parts[part], which does not fit the dtype.
func rangeErr[T tokenID](w *Writer, parts [][]T, part, bad int) error {
	index := bad
	for _, p := range parts[:part] {
		index += len(p)
	}
	return fmt.Errorf("shards: %s: document %d, token %d: id %d does not fit %s (0..%d): %w\n---> HINT: a vocabulary of 65500 ids or more needs int32 shards (DTypeForVocab)",
		w.prefix, len(w.sizes), index, parts[part][bad], w.dtype, w.dtype.MaxID(), ErrTokenRange)
}

// encodeTokens writes ids little-endian into dst (len(ids)·itemsize bytes) and returns the
// index of the first id that does not fit dtype, or -1.
//
// Performance note: this loop is a third of the Writer's time (sha256 another 40%, the
// write syscalls the rest). A per-id range branch plus binary.PutUint16 ran ~1 GB/s; OR-ing
// all ids into one word, checking once per call and storing 8 (uint16) or 2 (int32) ids per
// 64-bit store runs 2.5-3 GB/s, as fast as an unsafe []uint16 view of dst, without unsafe.
// int32 ids to uint16 (`tokenize run`) go 16 per AVX2 step (packUint16) first.
func encodeTokens[T tokenID](dst []byte, ids []T, dtype DType) int {
	le := binary.LittleEndian
	var bad uint
	i := 0
	switch dtype {
	case Uint16:
		dst = dst[:2*len(ids)]
		if ids32, ok := any(ids).([]int32); ok { // tokenize run's ids: 16 per AVX2 step
			i, bad = packUint16(dst, ids32) // a negative id sets bit 31
		}
		for ; i+8 <= len(ids); i += 8 {
			s := ids[i : i+8 : i+8]
			bad |= uint(s[0]) | uint(s[1]) | uint(s[2]) | uint(s[3]) | uint(s[4]) | uint(s[5]) | uint(s[6]) | uint(s[7])
			d := dst[2*i : 2*i+16 : 2*i+16]
			le.PutUint64(d, uint64(uint16(s[0]))|uint64(uint16(s[1]))<<16|uint64(uint16(s[2]))<<32|uint64(uint16(s[3]))<<48)
			le.PutUint64(d[8:], uint64(uint16(s[4]))|uint64(uint16(s[5]))<<16|uint64(uint16(s[6]))<<32|uint64(uint16(s[7]))<<48)
		}
		for ; i < len(ids); i++ {
			bad |= uint(ids[i])
			le.PutUint16(dst[2*i:], uint16(ids[i]))
		}
	case Int32:
		dst = dst[:4*len(ids)]
		for ; i+4 <= len(ids); i += 4 {
			s := ids[i : i+4 : i+4]
			bad |= uint(s[0]) | uint(s[1]) | uint(s[2]) | uint(s[3])
			d := dst[4*i : 4*i+16 : 4*i+16]
			le.PutUint64(d, uint64(uint32(s[0]))|uint64(uint32(s[1]))<<32)
			le.PutUint64(d[8:], uint64(uint32(s[2]))|uint64(uint32(s[3]))<<32)
		}
		for ; i < len(ids); i++ {
			bad |= uint(ids[i])
			le.PutUint32(dst[4*i:], uint32(ids[i]))
		}
	}
	if bad > uint(dtype.MaxID()) { // a negative id sets the top bit
		return checkTokens(ids, dtype)
	}
	return -1
}

// checkTokens returns the index of the first id that does not fit dtype, or -1.
func checkTokens[T tokenID](ids []T, dtype DType) int {
	max := uint(dtype.MaxID())
	for i, id := range ids {
		if uint(id) > max {
			return i
		}
	}
	return -1
}

// flush hands the buffered bytes to the hash and the store.
func (w *Writer) flush() {
	if w.err != nil || len(w.buf) == 0 {
		w.buf = w.buf[:0]
		return
	}
	if err := w.ctx.Err(); err != nil {
		w.err = fmt.Errorf("shards: write %s.bin: %w", w.prefix, err)
		return
	}
	w.binHash.Write(w.buf)
	if _, err := w.bin.Write(w.buf); err != nil {
		w.err = fmt.Errorf("shards: write %s.bin in %s: %w", w.prefix, w.st, err)
	}
	w.buf = w.buf[:0]
}

// appendShard copies a whole shard: its sizes and doc_idx from ix and ix.BinSize() bytes of
// tokens from r, verifying their sha256 against wantSHA (when not empty). Merge uses it.
func (w *Writer) appendShard(ix *Index, r io.Reader, name, wantSHA string) error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.copyShard(ix, r, name, wantSHA); err != nil {
		w.err = err // the .bin holds part of the shard: only Abort is left
		return err
	}
	return nil
}

func (w *Writer) copyShard(ix *Index, r io.Reader, name, wantSHA string) error {
	if ix.dtype != w.dtype {
		return fmt.Errorf("shards: %s: dtype %s, want %s: %w", name, ix.dtype, w.dtype, ErrIncompatible)
	}
	base := int64(len(w.sizes))
	if !ix.identityDocIdx() && w.docIdx == nil {
		w.docIdx = make([]int64, len(w.sizes)+1, len(w.sizes)+ix.nDoc)
		for j := range w.docIdx {
			w.docIdx[j] = int64(j)
		}
	}
	if base+int64(ix.n) > math.MaxInt {
		return fmt.Errorf("shards: %s: too many sequences", name)
	}
	w.flush()
	h := sha256.New()
	want := ix.BinSize()
	copied, err := io.CopyBuffer(&binSink{w: w, h: h}, io.LimitReader(r, want), w.buf[:cap(w.buf)])
	w.buf = w.buf[:0]
	if err == nil && w.err != nil {
		err = w.err
	}
	if err != nil {
		return fmt.Errorf("shards: copy %s: %w", name, err)
	}
	if copied != want {
		return formatErr(ErrTruncated, name, copied, "", hintTruncated, "read %d bytes of the .bin, want %d", copied, want)
	}
	if got := hex.EncodeToString(h.Sum(nil)); wantSHA != "" && got != wantSHA {
		return formatErr(ErrChecksum, name, -1, "", "the input changed or is corrupt: run `shards verify` on it",
			"sha256 is %s, the manifest says %s", got, wantSHA)
	}
	for i := 0; i < ix.n; i++ {
		w.sizes = append(w.sizes, int32(ix.Size(i)))
	}
	if w.docIdx != nil {
		if ix.identityDocIdx() {
			for i := 1; i <= ix.n; i++ {
				w.docIdx = append(w.docIdx, base+int64(i))
			}
		} else {
			for j := 1; j < ix.nDoc; j++ {
				w.docIdx = append(w.docIdx, base+ix.DocIdx(j))
			}
		}
	}
	w.tokens += ix.tokens
	return nil
}

// binSink writes straight to the shard's .bin (bypassing the token buffer), hashing for
// both the output and the input being copied.
type binSink struct {
	w *Writer
	h hash.Hash
}

func (s *binSink) Write(p []byte) (int, error) {
	if err := s.w.ctx.Err(); err != nil {
		return 0, err
	}
	s.h.Write(p)
	s.w.binHash.Write(p)
	n, err := s.w.bin.Write(p)
	if err != nil {
		s.w.err = fmt.Errorf("shards: write %s.bin in %s: %w", s.w.prefix, s.w.st, err)
		return n, s.w.err
	}
	return n, nil
}

// Close writes the .idx, commits the .bin and then the .idx, and describes the shard. On
// any error nothing is left visible (a committed .bin is deleted again if the .idx fails).
func (w *Writer) Close() (ShardInfo, error) {
	if w.done {
		return ShardInfo{}, fmt.Errorf("shards: %s: close: %w", w.prefix, ErrClosed)
	}
	w.flush()
	w.done = true
	if w.err == nil && w.streaming {
		w.err = fmt.Errorf("shards: %s: close: document %d is being streamed and was not ended", w.prefix, len(w.sizes))
	}
	if w.err != nil {
		w.bin.Abort()
		return ShardInfo{}, w.err
	}
	if err := w.bin.Commit(); err != nil {
		w.bin.Abort()
		return ShardInfo{}, fmt.Errorf("shards: commit %s.bin in %s: %w", w.prefix, w.st, err)
	}
	info := ShardInfo{
		Prefix: w.prefix, Documents: int64(len(w.sizes)), Tokens: w.tokens,
		BinSHA256: hex.EncodeToString(w.binHash.Sum(nil)),
	}
	idxSHA, err := w.writeIdx()
	if err != nil {
		if derr := w.st.Delete(context.WithoutCancel(w.ctx), w.prefix+".bin"); derr != nil {
			err = errors.Join(err, fmt.Errorf("shards: remove %s.bin after the failed .idx: %w", w.prefix, derr))
		}
		return ShardInfo{}, err
	}
	info.IdxSHA256 = idxSHA
	return info, nil
}

func (w *Writer) writeIdx() (string, error) {
	key := w.prefix + ".idx"
	iw, err := w.st.Create(w.ctx, key)
	if err != nil {
		return "", fmt.Errorf("shards: create %s in %s: %w", key, w.st, err)
	}
	defer iw.Abort()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(iw, h), 1<<20)
	if err := writeIndex(bw, w.dtype, w.sizes, w.docIdx); err != nil {
		return "", fmt.Errorf("shards: write %s in %s: %w", key, w.st, err)
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("shards: write %s in %s: %w", key, w.st, err)
	}
	if err := iw.Commit(); err != nil {
		return "", fmt.Errorf("shards: commit %s in %s: %w", key, w.st, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Abort discards the shard. It is a no-op after Close, so `defer w.Abort()` is the idiom.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	return w.bin.Abort()
}
