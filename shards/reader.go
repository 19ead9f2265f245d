package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"gptkit/storage"
)

// Reader is an open shard: PREFIX.idx and PREFIX.bin memory-mapped read-only and validated.
// Accessors return slices of the mapping itself (zero copy): they are read-only (writing to
// them faults) and valid until Close. A Reader is safe for concurrent use by readers.
//
// "Document" here means one sequence of the index, which is what GPT-NeoX's GPT2Dataset
// samples from; our writer makes documents and sequences one-to-one (doc_idx = [0..n]).
//
// The files must not be truncated while mapped (that faults with SIGBUS); stores replace
// objects by rename, so committed shards are never changed in place.
type Reader struct {
	name    string // PREFIX, for messages
	binPath string // the local file mapped
	idxMap  mmap.MMap
	binMap  mmap.MMap
	ix      *Index
	bin     []byte
}

// Open maps and validates the shard PREFIX.{idx,bin}. path may be the prefix or either
// file's name. Every problem is a *FormatError naming the file, the place and a fix.
func Open(path string, opts ...Option) (*Reader, error) {
	prefix := trimShardExt(path)
	r, err := openFiles(prefix, prefix+".idx", prefix+".bin", opts)
	if err != nil {
		return nil, err
	}
	if o := applyOptions(opts); o.verify && o.vocab > 0 { // no manifest: the ids are all there is to check
		if err := r.verifyData(context.Background(), r.binPath, nil, o.vocab, "the model (vocab_size)", nil, newVerifiedCache(o.cacheDir)); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func trimShardExt(path string) string {
	if p, ok := strings.CutSuffix(path, ".idx"); ok {
		return p
	}
	if p, ok := strings.CutSuffix(path, ".bin"); ok {
		return p
	}
	return path
}

// OpenStore opens the shard prefix (a key without extension) of st: in place when the
// store keeps local files, else from copies in cacheDir that storage.Fetch downloads once
// and checks against binSHA and idxSHA (as a manifest lists them; "" skips the check).
func OpenStore(ctx context.Context, st storage.Store, prefix, cacheDir, binSHA, idxSHA string, opts ...Option) (*Reader, error) {
	idxPath, err := localCopy(ctx, st, prefix+".idx", cacheDir, idxSHA)
	if err != nil {
		return nil, err
	}
	binPath, err := localCopy(ctx, st, prefix+".bin", cacheDir, binSHA)
	if err != nil {
		return nil, err
	}
	return openFiles(keyName(st, prefix), idxPath, binPath, opts)
}

// localCopy is the local path of key: the store's own file, or a verified copy that
// storage.Fetch keeps in cacheDir ("" means storage.DefaultCacheDir).
func localCopy(ctx context.Context, st storage.Store, key, cacheDir, sha string) (string, error) {
	p, err := storage.Fetch(ctx, st, key, cacheDir, sha)
	if errors.Is(err, storage.ErrNotExist) {
		return "", &FormatError{File: keyName(st, key), Offset: -1, Msg: missingMsg(st, key), Err: ErrMissing,
			Hint: "a shard is two files, PREFIX.idx and PREFIX.bin: restore the missing one, or re-run the stage that wrote the dataset"}
	}
	if errors.Is(err, storage.ErrChecksum) {
		return "", &FormatError{File: keyName(st, key), Offset: -1, Msg: err.Error(), Err: ErrChecksum,
			Hint: "the object changed or is corrupt after its manifest was written: run `shards verify`"}
	}
	if err != nil {
		return "", fmt.Errorf("shards: fetch %s: %w", keyName(st, key), err)
	}
	return p, nil
}

// missingMsg says why key of st, which the store does not hold as a file, is missing:
// a local directory (or other non-file) in its place is named as such, not as absent.
func missingMsg(st storage.Store, key string) string {
	if p, ok := st.LocalPath(key); ok {
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			return notRegularMsg(fi)
		}
	}
	return "does not exist"
}

// notRegularMsg says what a path that should be a shard file is instead.
func notRegularMsg(fi os.FileInfo) string {
	if fi.IsDir() {
		return "is a directory, not a file"
	}
	return fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type())
}

// keyName names a key of st in messages.
func keyName(st storage.Store, key string) string {
	s := st.String()
	if s == "" {
		return key
	}
	return strings.TrimSuffix(s, "/") + "/" + key
}

func openFiles(name, idxPath, binPath string, opts []Option) (r *Reader, err error) {
	r = &Reader{name: name, binPath: binPath}
	defer func() {
		if err != nil {
			r.Close()
			r = nil
		}
	}()
	var binSize int64
	if r.idxMap, _, err = mapFile(idxPath); err != nil {
		return r, err
	}
	if r.binMap, binSize, err = mapFile(binPath); err != nil {
		return r, err
	}
	if r.ix, err = ParseIndex(name+".idx", r.idxMap, opts...); err != nil {
		return r, swappedHint(err, name, r.binMap)
	}
	if err = r.ix.CheckBinSize(name+".bin", binSize); err != nil {
		return r, err
	}
	r.bin = r.binMap
	return r, nil
}

// mapFile maps path read-only; an empty file maps to nil (mmap refuses length 0).
func mapFile(path string) (mmap.MMap, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, 0, &FormatError{File: path, Offset: -1, Msg: "does not exist",
				Hint: "a shard is two files, PREFIX.idx and PREFIX.bin: check the prefix, or re-run the stage that writes them", Err: ErrMissing}
		}
		return nil, 0, fmt.Errorf("shards: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("shards: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		// mmap would fail with "no such device" (a directory).
		return nil, 0, &FormatError{File: path, Offset: -1, Msg: notRegularMsg(fi), Err: ErrMissing,
			Hint: "a shard is two files, PREFIX.idx and PREFIX.bin: put the file in its place, or re-run the stage that writes them"}
	}
	size := fi.Size()
	if size == 0 {
		return nil, 0, nil
	}
	if size > math.MaxInt {
		return nil, 0, fmt.Errorf("shards: %s: %d bytes do not fit this platform's address space", path, size)
	}
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("shards: mmap %s: %w", path, err)
	}
	return m, size, nil
}

// Close unmaps the files. Slices obtained from the Reader must not be used afterwards.
func (r *Reader) Close() error {
	var first error
	for _, m := range []*mmap.MMap{&r.idxMap, &r.binMap} {
		if *m != nil {
			if err := m.Unmap(); err != nil && first == nil {
				first = fmt.Errorf("shards: unmap %s: %w", r.name, err)
			}
		}
	}
	r.bin, r.ix = nil, nil
	return first
}

// Name is the shard's prefix (path or store key), as used in messages.
func (r *Reader) Name() string { return r.name }

// Index is the shard's validated index.
func (r *Reader) Index() *Index { return r.ix }

// DType is the token type.
func (r *Reader) DType() DType { return r.ix.dtype }

// Len is the number of documents (sequences).
func (r *Reader) Len() int { return r.ix.n }

// NumTokens is the total number of tokens.
func (r *Reader) NumTokens() int64 { return r.ix.tokens }

// MergedDocIdx reports a GPT-NeoX merge_file_ doc_idx ([0]) accepted by AllowMergedDocIdx.
func (r *Reader) MergedDocIdx() bool { return r.ix.mergedDoc }

// Size is the number of tokens of document i.
func (r *Reader) Size(i int) int { return r.ix.Size(i) }

// Bin is the whole .bin: every token, documents back to back.
func (r *Reader) Bin() []byte { return r.bin }

// Doc returns document i's raw little-endian token bytes. It panics if i is out of range,
// like a slice index.
func (r *Reader) Doc(i int) []byte {
	if uint(i) >= uint(r.ix.n) {
		panic(fmt.Sprintf("shards: %s: document %d out of range [0,%d)", r.name, i, r.ix.n))
	}
	p := r.ix.Pointer(i)
	end := p + int64(r.ix.Size(i))*int64(r.ix.dtype.Size())
	return r.bin[p:end:end]
}

// DocUint16 returns document i of a uint16 shard as a zero-copy view of the mapping (a
// copy on big-endian machines). It panics if the shard is not uint16.
func (r *Reader) DocUint16(i int) []uint16 {
	if r.ix.dtype != Uint16 {
		panic(fmt.Sprintf("shards: %s: DocUint16 on a %s shard", r.name, r.ix.dtype))
	}
	return viewUint16(r.Doc(i))
}

// DocInt32 returns document i of an int32 shard as a zero-copy view of the mapping (a copy
// on big-endian machines). It panics if the shard is not int32.
func (r *Reader) DocInt32(i int) []int32 {
	if r.ix.dtype != Int32 {
		panic(fmt.Sprintf("shards: %s: DocInt32 on a %s shard", r.name, r.ix.dtype))
	}
	return viewInt32(r.Doc(i))
}

// Tokens returns a copy of document i's tokens as ints.
func (r *Reader) Tokens(i int) []int {
	return r.AppendTokens(make([]int, 0, r.ix.Size(i)), i)
}

// AppendTokens appends document i's tokens to dst.
func (r *Reader) AppendTokens(dst []int, i int) []int {
	return appendDecoded(dst, r.Doc(i), r.ix.dtype)
}

// appendDecoded appends the little-endian tokens in b to dst.
func appendDecoded(dst []int, b []byte, dt DType) []int {
	le := binary.LittleEndian
	switch dt {
	case Uint16:
		for _, v := range viewUint16(b) {
			dst = append(dst, int(v))
		}
	case Int32:
		for _, v := range viewInt32(b) {
			dst = append(dst, int(v))
		}
	case Uint8:
		for _, v := range b {
			dst = append(dst, int(v))
		}
	case Int8:
		for _, v := range b {
			dst = append(dst, int(int8(v)))
		}
	case Int16:
		for i := 0; i+2 <= len(b); i += 2 {
			dst = append(dst, int(int16(le.Uint16(b[i:]))))
		}
	case Int64:
		for i := 0; i+8 <= len(b); i += 8 {
			dst = append(dst, int(int64(le.Uint64(b[i:]))))
		}
	}
	return dst
}

// The .bin is mapped at a page boundary and every pointer is a multiple of the item size
// (checked on open), so documents are aligned for their type and can be viewed in place.
// The bytes are little-endian: the zero-copy views are used only on little-endian
// machines (and for aligned data); otherwise the tokens are decoded into a copy.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func viewUint16(b []byte) []uint16 {
	n := len(b) / 2
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

func viewInt32(b []byte) []int32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
