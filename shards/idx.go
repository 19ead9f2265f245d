package shards

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// The Megatron/GPT-NeoX MMIDIDX v1 index (megatron/data/indexed_dataset.py), little-endian:
//
//	magic    "MMIDIDX\x00\x00"   9 bytes
//	version  u64 = 1             8
//	dtype    u8 (DType code)     1
//	n_seq    u64                 8
//	n_docidx u64                 8     -> header = 34 bytes
//	sizes    int32[n_seq]              tokens per sequence
//	pointers int64[n_seq]              byte offset of each sequence in .bin
//	                                   (exclusive cumulative sum of sizes x itemsize)
//	doc_idx  int64[n_docidx]           [0, end of doc 1, ...]: sequence index after each
//	                                   end_document; our writer makes it [0, 1, ..., n_seq]
//
// The header is 34 bytes, so the arrays are not aligned: they are decoded with
// encoding/binary, never by casting the mapped bytes.
const (
	// Magic starts every .idx file.
	Magic = "MMIDIDX\x00\x00"
	// Version is the only .idx version there is.
	Version = 1
	// HeaderSize is the length of the .idx header.
	HeaderSize = 34

	legacyMagic = "TNTIDX\x00\x00" // the "cached"/"lazy" IndexedDataset
)

// Index is a validated, zero-copy view of an .idx file's bytes. It decodes entries on
// access, so a shard of a hundred million sequences costs no heap. It must not outlive
// the bytes it was parsed from.
type Index struct {
	data      []byte
	dtype     DType
	n, nDoc   int
	ptrOff    int   // start of pointers
	docOff    int   // start of doc_idx
	tokens    int64 // sum of sizes
	mergedDoc bool  // doc_idx is [0] for a non-empty shard (allowed by option)
}

// Option changes how shards are read and checked.
type Option func(*options)

type options struct {
	allowMergedDocIdx bool
	verify            bool      // VerifyOnOpen
	vocab             int       // VerifyOnOpen's vocabulary (0: the manifest's)
	cacheDir          string    // VerifyOnOpen's cache directory
	manifest          *Manifest // WithManifest's
}

// VerifyOnOpen makes OpenDataset and Open check each shard's data before returning it,
// as `shards verify` does (see verified.go): the .idx's and .bin's sha256 against the
// manifest (OpenDataset), and every token id against the vocabulary: [0, vocab), or, with
// vocab 0, the manifest's tokenizer's (with both, the smaller; with neither, no id
// check). A flipped byte is an ErrChecksum error, an id outside the vocabulary an
// ErrVocab error naming the shard and the byte offset. A .bin found good is remembered
// in cacheDir/verified ("": storage.DefaultCacheDir()) until it changes, so reopening it
// costs a stat.
func VerifyOnOpen(vocab int, cacheDir string) Option {
	return func(o *options) { o.verify, o.vocab, o.cacheDir = true, vocab, cacheDir }
}

// WithManifest gives OpenDataset the dataset's manifest, read by the caller
// (ReadManifest of the same store and directory), which it then does not read again
// (on S3, one GET less); nil reads it.
func WithManifest(m *Manifest) Option { return func(o *options) { o.manifest = m } }

// AllowMergedDocIdx accepts shards whose doc_idx is [0] although they hold sequences: the
// output of GPT-NeoX's merge_datasets.py (MMapIndexedDatasetBuilder.merge_file_ appends
// sizes but never doc_idx). Such a shard reads as one document per sequence; Verify
// reports it as a warning instead of an error.
func AllowMergedDocIdx() Option { return func(o *options) { o.allowMergedDocIdx = true } }

func applyOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ParseIndex validates an .idx file's bytes and returns a view of them. name is used in
// error messages. Every problem is a *FormatError; ParseIndex never panics, whatever the
// bytes. The .bin size is checked separately with CheckBinSize.
func ParseIndex(name string, data []byte, opts ...Option) (*Index, error) {
	o := applyOptions(opts)
	size := len(data)
	if size < len(Magic) {
		if bytes.HasPrefix([]byte(Magic), data) {
			return nil, formatErr(ErrTruncated, name, int64(size), "header", hintTruncated,
				"the file has %d bytes, fewer than the %d-byte header", size, HeaderSize)
		}
		return nil, badMagic(name, data)
	}
	if string(data[:len(Magic)]) != Magic {
		return nil, badMagic(name, data)
	}
	if size < HeaderSize {
		return nil, formatErr(ErrTruncated, name, int64(size), "header", hintTruncated,
			"the file has %d bytes, fewer than the %d-byte header", size, HeaderSize)
	}
	le := binary.LittleEndian
	if v := le.Uint64(data[9:]); v != Version {
		return nil, formatErr(ErrBadVersion, name, 9, "version", "this reader knows MMIDIDX version 1 only (GPT-NeoX, Megatron-LM)",
			"version is %d, want %d", v, Version)
	}
	dt := DType(data[17])
	if !dt.Valid() {
		hint := "supported dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16"
		msg := "unknown dtype code %d"
		if dt == 6 || dt == 7 {
			msg = "dtype code %d is a floating-point type (float32 or float64, depending on the upstream version), which cannot hold token ids"
		}
		return nil, formatErr(ErrBadDType, name, 17, "dtype", hint, msg, uint8(dt))
	}
	nSeq, nDoc := le.Uint64(data[18:]), le.Uint64(data[26:])
	rest := uint64(size - HeaderSize)
	if nSeq > rest/12 {
		if n, ok := fitsSize(data, rest, nDoc, 8, 12); ok {
			return nil, formatErr(ErrCorrupt, name, 18, "n_seq", hintRewrite,
				"n_seq = %d does not fit the file, but n_seq = %d does, with n_docidx = %d and doc_idx ending at %d: the header is damaged", nSeq, n, nDoc, n)
		}
		return nil, formatErr(ErrTruncated, name, 18, "n_seq", hintTruncated,
			"n_seq = %d needs %s bytes of sizes and pointers, but only %d bytes follow the header", nSeq, mulString(nSeq, 12), rest)
	}
	rest -= nSeq * 12
	if nDoc > rest/8 {
		if n, ok := fitsSize(data, rest, 0, 0, 8); ok && uint64(int64(le.Uint64(data[size-8:]))) == nSeq {
			return nil, formatErr(ErrCorrupt, name, 26, "n_docidx", hintRewrite,
				"n_docidx = %d does not fit the file, but n_docidx = %d does, with doc_idx ending at n_seq = %d: the header is damaged", nDoc, n, nSeq)
		}
		return nil, formatErr(ErrTruncated, name, 26, "n_docidx", hintTruncated,
			"n_docidx = %d needs %s bytes, but only %d bytes follow sizes and pointers", nDoc, mulString(nDoc, 8), rest)
	}
	if extra := rest - nDoc*8; extra != 0 {
		return nil, formatErr(ErrCorrupt, name, int64(size)-int64(extra), "after doc_idx", hintRewrite,
			"%d unexpected bytes after doc_idx (n_seq = %d, n_docidx = %d)", extra, nSeq, nDoc)
	}
	ix := &Index{data: data, dtype: dt, n: int(nSeq), nDoc: int(nDoc)}
	ix.ptrOff = HeaderSize + 4*ix.n
	ix.docOff = ix.ptrOff + 8*ix.n
	if err := ix.checkSizes(name); err != nil {
		return nil, err
	}
	if err := ix.checkDocIdx(name, o); err != nil {
		return nil, err
	}
	return ix, nil
}

// fitsSize tells a damaged header count from a truncated file: the count n whose
// per-entry bytes (each) fill what rest bytes leave after other entries of otherEach
// bytes, exactly; with otherEach 8 (n_seq, other = n_docidx) also only where doc_idx's
// last entry is that n, as a complete index's is (a cut file's last 8 bytes rarely are).
func fitsSize(data []byte, rest, other, otherEach, each uint64) (uint64, bool) {
	if otherEach != 0 && other > rest/otherEach {
		return 0, false
	}
	left := rest - other*otherEach
	if left%each != 0 || left == 0 && other == 0 {
		return 0, false
	}
	n := left / each
	if otherEach == 8 && (other == 0 || binary.LittleEndian.Uint64(data[len(data)-8:]) != n) {
		return 0, false
	}
	return n, true
}

func badMagic(name string, data []byte) error {
	if bytes.HasPrefix(data, []byte(legacyMagic)) {
		return formatErr(ErrBadMagic, name, 0, "magic", "re-run GPT-NeoX/Megatron preprocess_data.py with --dataset-impl mmap, or tokenize again with gptkit",
			"this is a legacy IndexedDataset index (magic TNTIDX), not MMIDIDX")
	}
	return formatErr(ErrBadMagic, name, 0, "magic", "is this an .idx file of a Megatron/GPT-NeoX dataset? "+hintRewrite,
		"the file starts with %q, want %q", data[:min(len(data), len(Magic))], Magic)
}

// swappedHint is err, an .idx's parse error, with a hint to swap the shard PREFIX's two
// files back if its .idx is not an index but its .bin (binHead, its first bytes) is: a
// rename gone wrong, which read as a damaged .idx to restore or rewrite.
func swappedHint(err error, prefix string, binHead []byte) error {
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrBadMagic) || !bytes.HasPrefix(binHead, []byte(Magic)) {
		return err
	}
	c := *fe
	c.Hint = "the shard's two files are swapped: " + prefix + ".bin holds the index. Swap them back (rename " + prefix + ".idx to .bin and " + prefix + ".bin to .idx)"
	return &c
}

// SwappedHint is err, the parse error of shard PREFIX's .idx, with the hint that its
// two files are swapped when its .bin (binHead, at least its first len(Magic) bytes)
// is the index: for a caller that reads the .idx itself (shards info), as Open and
// Verify do.
func SwappedHint(err error, prefix string, binHead []byte) error {
	return swappedHint(err, prefix, binHead)
}

// mulString prints a·b without overflowing.
func mulString(a, b uint64) string {
	if a > math.MaxUint64/b {
		return "more than 2^64"
	}
	return itoa(a * b)
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// checkSizes checks sizes are non-negative and pointers are their running sum.
func (ix *Index) checkSizes(name string) error {
	le := binary.LittleEndian
	item := int64(ix.dtype.Size())
	limit := int64(math.MaxInt64) / item
	var sum int64
	sizes := ix.data[HeaderSize:ix.ptrOff]
	ptrs := ix.data[ix.ptrOff:ix.docOff]
	for i := 0; i < ix.n; i++ {
		s := int64(int32(le.Uint32(sizes[4*i:])))
		if s < 0 {
			return formatErr(ErrCorrupt, name, int64(HeaderSize+4*i), "sizes["+itoa(uint64(i))+"]", hintRewrite,
				"negative sequence size %d", s)
		}
		if p := int64(le.Uint64(ptrs[8*i:])); p != sum*item {
			return formatErr(ErrCorrupt, name, int64(ix.ptrOff+8*i), "pointers["+itoa(uint64(i))+"]", hintRewrite,
				"pointer is %d, want %d (the running sum of sizes x %d-byte %s)", p, sum*item, item, ix.dtype)
		}
		if sum += s; sum > limit {
			return formatErr(ErrCorrupt, name, int64(HeaderSize+4*i), "sizes["+itoa(uint64(i))+"]", hintRewrite,
				"sizes add up to more than 2^63 bytes")
		}
	}
	ix.tokens = sum
	return nil
}

// checkDocIdx checks doc_idx starts at 0, never decreases and ends at n_seq.
func (ix *Index) checkDocIdx(name string, o options) error {
	if ix.nDoc == 0 {
		return formatErr(ErrCorrupt, name, int64(ix.docOff), "doc_idx", hintRewrite,
			"doc_idx is empty; it must start with 0")
	}
	where := func(j int) string { return "doc_idx[" + itoa(uint64(j)) + "]" }
	prev := int64(0)
	for j := 0; j < ix.nDoc; j++ {
		v := ix.DocIdx(j)
		switch {
		case j == 0 && v != 0:
			return formatErr(ErrCorrupt, name, int64(ix.docOff), where(0), hintRewrite, "doc_idx starts at %d, want 0", v)
		case v < prev:
			return formatErr(ErrCorrupt, name, int64(ix.docOff+8*j), where(j), hintRewrite,
				"doc_idx decreases: %d after %d", v, prev)
		case v > int64(ix.n):
			return formatErr(ErrCorrupt, name, int64(ix.docOff+8*j), where(j), hintRewrite,
				"doc_idx entry %d is past the last sequence (n_seq = %d)", v, ix.n)
		}
		prev = v
	}
	if prev == int64(ix.n) {
		return nil
	}
	if ix.nDoc == 1 {
		if o.allowMergedDocIdx {
			ix.mergedDoc = true
			return nil
		}
		return formatErr(ErrMergedDocIdx, name, int64(ix.docOff), "doc_idx",
			"this looks like GPT-NeoX merge_datasets.py output (merge_file_ never extends doc_idx): re-merge the inputs with `shards merge`, or accept it with --allow-merged-doc-idx (one document per sequence)",
			"doc_idx is [0] but the shard has %d sequences", ix.n)
	}
	return formatErr(ErrCorrupt, name, int64(ix.docOff+8*(ix.nDoc-1)), where(ix.nDoc-1), hintRewrite,
		"doc_idx ends at %d, want n_seq = %d", prev, ix.n)
}

// CheckBinSize checks that a .bin of binSize bytes holds exactly the index's tokens.
func (ix *Index) CheckBinSize(binName string, binSize int64) error {
	want := ix.BinSize()
	switch {
	case binSize < want:
		return formatErr(ErrTruncated, binName, binSize, "", "the .bin is truncated (an interrupted copy or write), or the .idx beside it is another shard's: re-run the stage that wrote them, or restore them, then run `shards verify`",
			"the .bin has %d bytes, but its index describes %d tokens x %d bytes = %d bytes", binSize, ix.tokens, ix.dtype.Size(), want)
	case binSize > want:
		return formatErr(ErrCorrupt, binName, want, "", "the .bin and .idx do not belong together, or the .bin was appended to: "+hintRewrite,
			"the .bin has %d bytes, %d more than its index describes (%d tokens x %d bytes)", binSize, binSize-want, ix.tokens, ix.dtype.Size())
	}
	return nil
}

// DType is the token type.
func (ix *Index) DType() DType { return ix.dtype }

// Len is the number of sequences (n_seq).
func (ix *Index) Len() int { return ix.n }

// NumTokens is the sum of all sizes.
func (ix *Index) NumTokens() int64 { return ix.tokens }

// BinSize is the length the .bin must have: NumTokens x itemsize.
func (ix *Index) BinSize() int64 { return ix.tokens * int64(ix.dtype.Size()) }

// Size is the number of tokens of sequence i (0 <= i < Len()).
func (ix *Index) Size(i int) int {
	return int(int32(binary.LittleEndian.Uint32(ix.data[HeaderSize+4*i:])))
}

// Pointer is the byte offset of sequence i in the .bin.
func (ix *Index) Pointer(i int) int64 {
	return int64(binary.LittleEndian.Uint64(ix.data[ix.ptrOff+8*i:]))
}

// NumDocIdx is the number of doc_idx entries (n_docidx).
func (ix *Index) NumDocIdx() int { return ix.nDoc }

// DocIdx is doc_idx[j].
func (ix *Index) DocIdx(j int) int64 {
	return int64(binary.LittleEndian.Uint64(ix.data[ix.docOff+8*j:]))
}

// MergedDocIdx reports whether doc_idx is GPT-NeoX merge_file_'s [0] for a non-empty shard
// (accepted only with AllowMergedDocIdx).
func (ix *Index) MergedDocIdx() bool { return ix.mergedDoc }

// identityDocIdx reports whether doc_idx is [0, 1, ..., n] (one document per sequence) or
// merge_file_'s [0], which reads the same.
func (ix *Index) identityDocIdx() bool {
	if ix.mergedDoc {
		return true
	}
	if ix.nDoc != ix.n+1 {
		return false
	}
	for j := 0; j < ix.nDoc; j++ {
		if ix.DocIdx(j) != int64(j) {
			return false
		}
	}
	return true
}

// WriteIndex writes an MMIDIDX v1 index for sequences of the given sizes, computing the
// pointers, byte for byte as GPT-NeoX's MMapIndexedDatasetBuilder.finalize. A nil docIdx
// means one document per sequence ([0, 1, ..., len(sizes)]).
func WriteIndex(w io.Writer, dtype DType, sizes []int32, docIdx []int64) error {
	return writeIndex(w, dtype, sizes, docIdx)
}

func writeIndex(w io.Writer, dtype DType, sizes []int32, docIdx []int64) error {
	le := binary.LittleEndian
	nDoc := len(sizes) + 1
	if docIdx != nil {
		nDoc = len(docIdx)
	}
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, Magic...)
	buf = le.AppendUint64(buf, Version)
	buf = append(buf, byte(dtype))
	buf = le.AppendUint64(buf, uint64(len(sizes)))
	buf = le.AppendUint64(buf, uint64(nDoc))
	flush := func(need int) error {
		if len(buf)+need <= cap(buf) {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, s := range sizes {
		if err := flush(4); err != nil {
			return err
		}
		buf = le.AppendUint32(buf, uint32(s))
	}
	item := int64(dtype.Size())
	var ptr int64
	for _, s := range sizes {
		if err := flush(8); err != nil {
			return err
		}
		buf = le.AppendUint64(buf, uint64(ptr))
		ptr += int64(s) * item
	}
	for j := 0; j < nDoc; j++ {
		if err := flush(8); err != nil {
			return err
		}
		v := int64(j)
		if docIdx != nil {
			v = docIdx[j]
		}
		buf = le.AppendUint64(buf, uint64(v))
	}
	_, err := w.Write(buf)
	return err
}
