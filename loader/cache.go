package loader

// Index cache files. GPT-NeoX caches its index arrays under names made of the split
// name, sample count, sequence length and seed only, and reuses them even when the
// data underneath changed. Ours are named by a SHA-256 of every input (see
// indexKey and blendKey) and carry a checksum of their contents, so a stale or
// damaged file is never used: a changed input asks for another file, a damaged one
// fails its checksum and is rebuilt.
//
// Layout (little-endian):
//
//	0    magic "GPTKIDX\n"
//	8    version uint32 (cacheVersion), array count uint32
//	16   key [32]byte: the SHA-256 of the inputs the file name is derived from
//	48   sum [32]byte: SHA-256 of every byte from offset 80 to the end
//	80   per array: element size uint32, reserved uint32, length uint64
//	...  metadata: length uint64, JSON, zero padding to a multiple of 8
//	...  the arrays, each zero-padded to a multiple of 8 bytes
//
// Files are written through a storage.Store, whose Commit publishes them
// atomically; several ranks building the same index publish identical files.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"gptkit/storage"
)

const (
	cacheMagic   = "GPTKIDX\n"
	cacheVersion = 1
	cacheHeader  = 80
	// cacheDirName is the directory of index files next to the data (a key
	// prefix of the dataset's store) and under Options.CacheDir.
	cacheDirName = "index-cache"
)

// errCorrupt is matched by readCache errors for files that exist but cannot be
// used (bad magic, version, key or checksum, short file).
var errCorrupt = errors.New("loader: corrupt index cache file")

// cacheArray is one array of a cache file: elem bytes per element, data its
// little-endian bytes.
type cacheArray struct {
	elem int
	data []byte
}

func pad8(n int) int { return (n + 7) &^ 7 }

// encodeCache lays out a cache file.
func encodeCache(key [32]byte, meta any, arrays []cacheArray) ([]byte, error) {
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	size := cacheHeader + 16*len(arrays) + 8 + pad8(len(mj))
	for _, a := range arrays {
		size += pad8(len(a.data))
	}
	b := make([]byte, size)
	copy(b, cacheMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], cacheVersion)
	le.PutUint32(b[12:], uint32(len(arrays)))
	copy(b[16:48], key[:])
	off := cacheHeader
	for _, a := range arrays {
		le.PutUint32(b[off:], uint32(a.elem))
		le.PutUint64(b[off+8:], uint64(len(a.data)/a.elem))
		off += 16
	}
	le.PutUint64(b[off:], uint64(len(mj)))
	off += 8
	copy(b[off:], mj)
	off += pad8(len(mj))
	for _, a := range arrays {
		copy(b[off:], a.data)
		off += pad8(len(a.data))
	}
	sum := sha256.Sum256(b[cacheHeader:])
	copy(b[48:80], sum[:])
	return b, nil
}

// decodeCache checks a cache file's magic, version, key and checksum and returns
// its metadata JSON and arrays (views of b).
func decodeCache(name string, b []byte, key [32]byte, want int) (meta []byte, arrays []cacheArray, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s (it is rebuilt)", errCorrupt, name, fmt.Sprintf(format, args...))
	}
	le := binary.LittleEndian
	if len(b) < cacheHeader || string(b[:8]) != cacheMagic {
		return nil, nil, bad("not an index cache file (bad magic)")
	}
	if v := le.Uint32(b[8:]); v != cacheVersion {
		return nil, nil, bad("version %d, want %d", v, cacheVersion)
	}
	if !bytes.Equal(b[16:48], key[:]) {
		return nil, nil, bad("made for other inputs (key differs)")
	}
	if sum := sha256.Sum256(b[cacheHeader:]); !bytes.Equal(sum[:], b[48:80]) {
		return nil, nil, bad("checksum mismatch: the file is damaged")
	}
	n := int(le.Uint32(b[12:]))
	if n != want {
		return nil, nil, bad("%d arrays, want %d", n, want)
	}
	off := cacheHeader
	if len(b) < off+16*n+8 {
		return nil, nil, bad("truncated")
	}
	type dim struct{ elem, n uint64 }
	dims := make([]dim, n)
	for k := range dims {
		dims[k] = dim{uint64(le.Uint32(b[off:])), le.Uint64(b[off+8:])}
		off += 16
	}
	ml := le.Uint64(b[off:])
	off += 8
	if ml > uint64(len(b)-off) {
		return nil, nil, bad("truncated metadata")
	}
	meta = b[off : off+int(ml)]
	off += pad8(int(ml))
	for _, d := range dims {
		if d.elem == 0 || d.elem > 8 || d.n > uint64(len(b)) || off > len(b) || d.elem*d.n > uint64(len(b)-off) {
			return nil, nil, bad("truncated arrays")
		}
		sz := int(d.elem * d.n)
		arrays = append(arrays, cacheArray{elem: int(d.elem), data: b[off : off+sz]})
		off += pad8(sz)
	}
	return meta, arrays, nil
}

// readCacheFile reads key's file from st: ok is false when it does not exist;
// a file that fails decodeCache is an error matching errCorrupt.
func readCacheFile(ctx context.Context, st storage.Store, name string, key [32]byte, want int) (meta []byte, arrays []cacheArray, ok bool, err error) {
	var b []byte
	if p, local := st.LocalPath(name); local {
		b, err = os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Absent (ENOTDIR: a file where index-cache/ would be, which sends the
			// cache to CacheDir, as read-only data does).
			return nil, nil, false, nil
		}
	} else {
		err = errors.New("index caches live in local directories")
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("loader: read index cache %s/%s: %w", st, name, err)
	}
	meta, arrays, err = decodeCache(st.String()+"/"+name, b, key, want)
	return meta, arrays, err == nil, err
}

// writeCacheFile publishes b as name in st (atomically).
func writeCacheFile(ctx context.Context, st storage.Store, name string, b []byte) error {
	w, err := st.Create(ctx, name)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Commit()
}

// littleEndian reports whether this machine stores integers little-endian, so
// cache arrays can be viewed in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// asBytes returns the little-endian bytes of a (a view on little-endian machines).
func asBytes[T int32 | uint32 | int64 | uint8](a []T) []byte {
	if len(a) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(a[0]))
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*size)
	}
	b := make([]byte, len(a)*size)
	for i, v := range a {
		switch size {
		case 1:
			b[i] = byte(v)
		case 4:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
	}
	return b
}

// fromBytes returns the elements of little-endian b (a view when b is aligned on a
// little-endian machine, else a copy).
func fromBytes[T int32 | uint32 | int64 | uint8](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := len(b) / size
	if n == 0 {
		return []T{}
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%uintptr(size) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]T, n)
	for i := range out {
		switch size {
		case 1:
			out[i] = T(b[i])
		case 4:
			out[i] = T(binary.LittleEndian.Uint32(b[4*i:]))
		case 8:
			out[i] = T(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
