package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gptkit/storage"
)

// Format is a token-file format of another trainer.
type Format string

// The formats Import reads and the Export functions write.
const (
	// NanoGPT is nanoGPT's train.bin/val.bin: headerless little-endian uint16 tokens,
	// documents back to back (OpenWebText appends EOT 50256 after each; Shakespeare has none).
	NanoGPT Format = "nanogpt"
	// LLMC is llm.c's shard: a 256 x int32 header (magic, version, token count) then the
	// tokens; GPT-2 shards (magic 20240520, version 1) hold uint16, llama-3 shards (magic
	// 20240801, version 7) uint32. dev/data writes EOT *before* each document (fineweb.py:
	// all_tokens.append(eot) then the document's tokens).
	LLMC Format = "llmc"
)

// llm.c header (dev/data/data_common.py write_datafile, llmc/dataloader.h).
const (
	llmcHeaderSize    = 256 * 4
	llmcMagicGPT2     = 20240520
	llmcVersionGPT2   = 1
	llmcMagicLlama3   = 20240801
	llmcVersionLlama3 = 7
	llmcMagicEval     = 20240522 // evaluation (HellaSwag) files: not token streams

	// LLMCShardTokens is llm.c's default shard size (fineweb.py --shard_size 10**8).
	LLMCShardTokens = 100_000_000
)

// ExportNanoGPT writes every token of d's split (see Dataset.SplitShards), documents in
// order, as nanoGPT's headerless uint16 stream (train.bin or val.bin), and returns the
// number of tokens written. Documents keep their end-of-document ids where they have
// them, after each document, as nanoGPT's openwebtext/prepare.py puts them. An int32
// dataset converts only if every id is below 65536 (otherwise an ErrTokenRange error
// names the document).
func ExportNanoGPT(ctx context.Context, d *Dataset, split string, w io.Writer) (int64, error) {
	var n int64
	buf := make([]byte, 0, writeBufSize)
	for _, s := range d.SplitShards(split) {
		r := d.Shard(s)
		if r.DType() == Uint16 {
			for b := r.Bin(); len(b) > 0; {
				if err := ctx.Err(); err != nil {
					return n, err
				}
				chunk := b[:min(len(b), writeBufSize)]
				b = b[len(chunk):]
				if _, err := w.Write(chunk); err != nil {
					return n, fmt.Errorf("shards: export nanogpt: %w", err)
				}
				n += int64(len(chunk) / 2)
			}
			continue
		}
		for i := 0; i < r.Len(); i++ {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return n, err
				}
			}
			toks := r.AppendTokens(nil, i)
			for k, id := range toks {
				if uint(id) > math.MaxUint16 {
					return n, fmt.Errorf("shards: export nanogpt: %s document %d, token %d: id %d does not fit uint16: %w\n---> HINT: nanoGPT's .bin holds uint16 only; use --to llmc for large vocabularies",
						r.Name(), i, k, id, ErrTokenRange)
				}
			}
			if len(buf)+2*len(toks) > cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return n, fmt.Errorf("shards: export nanogpt: %w", err)
				}
				buf = buf[:0]
			}
			for _, id := range toks {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(id))
			}
			n += int64(len(toks))
		}
	}
	if _, err := w.Write(buf); err != nil {
		return n, fmt.Errorf("shards: export nanogpt: %w", err)
	}
	return n, nil
}

// LLMCOptions name and size llm.c shards.
type LLMCOptions struct {
	Name        string // file name start, e.g. "fineweb"
	Split       string // the dataset's split to export, also written into the names: "train" or "val"
	FirstIndex  int    // NNNNNN of the first file (llm.c numbers val 0, train from 1)
	ShardTokens int    // tokens per file, default LLMCShardTokens
}

// LLMCName is llm.c's shard file name, {name}_{split}_{NNNNNN}.bin.
func LLMCName(name, split string, index int) string {
	return fmt.Sprintf("%s_%s_%06d.bin", name, split, index)
}

// ExportLLMC writes the token stream of d's split o.Split as llm.c shards under dir of
// st, filling each file to o.ShardTokens as llm.c does (documents may straddle files),
// and returns their keys. llm.c's dev/data scripts put the end-of-text id *before* each
// document, where this package's datasets (GPT-NeoX's convention) keep it after: a
// document that ends with the tokenizer's EOD id is written as EOD followed by the rest
// (Import with SplitAtEOD turns it back); one without is written as it is. The token
// count is unchanged. uint16 datasets get GPT-2 headers, int32 ones llama-3 headers with
// uint32 tokens. Each file is committed atomically; on error the ones already written
// are deleted.
func ExportLLMC(ctx context.Context, d *Dataset, st storage.Store, dir string, o LLMCOptions) (keys []string, err error) {
	if o.ShardTokens <= 0 {
		o.ShardTokens = LLMCShardTokens
	}
	if o.ShardTokens > math.MaxInt32 {
		return nil, fmt.Errorf("shards: export llmc: %d tokens per shard do not fit the int32 header", o.ShardTokens)
	}
	if o.Name == "" || o.Split == "" {
		return nil, errors.New("shards: export llmc: name and split are required")
	}
	magic, version := int32(llmcMagicGPT2), int32(llmcVersionGPT2)
	item := d.DType().Size()
	switch d.DType() {
	case Uint16:
	case Int32:
		magic, version = llmcMagicLlama3, llmcVersionLlama3
	default:
		return nil, fmt.Errorf("shards: export llmc: %w: %s", ErrBadDType, d.DType())
	}
	defer func() {
		if err != nil {
			for _, k := range keys {
				st.Delete(context.WithoutCancel(ctx), k)
			}
			keys = nil
		}
	}()
	stream := newEODFirstStream(d, o.Split)
	total := d.SplitTokens(o.Split)
	for k := 0; int64(k)*int64(o.ShardTokens) < total || (k == 0 && total == 0); k++ {
		ntok := min(int64(o.ShardTokens), total-int64(k)*int64(o.ShardTokens))
		key := join(dir, LLMCName(o.Name, o.Split, o.FirstIndex+k))
		if err := writeLLMCFile(ctx, st, key, magic, version, ntok, item, stream); err != nil {
			return keys, err
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func writeLLMCFile(ctx context.Context, st storage.Store, key string, magic, version int32, ntok int64, item int, src *eodFirstStream) error {
	w, err := st.Create(ctx, key)
	if err != nil {
		return fmt.Errorf("shards: create %s: %w", keyName(st, key), err)
	}
	defer w.Abort()
	hdr := make([]byte, llmcHeaderSize)
	binary.LittleEndian.PutUint32(hdr[0:], uint32(magic))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(version))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(ntok))
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("shards: write %s: %w", keyName(st, key), err)
	}
	for left := ntok * int64(item); left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := src.next(min(left, writeBufSize))
		if len(b) == 0 {
			return fmt.Errorf("shards: export llmc: %s ends %d bytes early: %w", src.d.Dir, left, ErrCorrupt)
		}
		if item == 4 {
			for i := 3; i < len(b); i += 4 {
				if b[i]&0x80 != 0 {
					return fmt.Errorf("shards: export llmc: negative token id in %s: %w", src.d.Dir, ErrTokenRange)
				}
			}
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("shards: write %s: %w", keyName(st, key), err)
		}
		left -= int64(len(b))
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("shards: commit %s: %w", keyName(st, key), err)
	}
	return nil
}

// eodFirstStream reads the token bytes of a split's documents, across shards, with each
// document's trailing end-of-document id moved to its front (llm.c's layout).
type eodFirstStream struct {
	d      *Dataset
	shards []int  // the split's shards
	eod    []byte // the EOD id's bytes; nil when the tokenizer has none
	si     int    // index into shards
	doc    int    // next document of shards[si]
	queue  [][]byte
}

func newEODFirstStream(d *Dataset, split string) *eodFirstStream {
	s := &eodFirstStream{d: d, shards: d.SplitShards(split)}
	if eod := d.Manifest.Tokenizer.EODID; eod >= 0 {
		if d.DType() == Uint16 && eod <= math.MaxUint16 {
			s.eod = binary.LittleEndian.AppendUint16(nil, uint16(eod))
		} else if d.DType() == Int32 {
			s.eod = binary.LittleEndian.AppendUint32(nil, uint32(eod))
		}
	}
	return s
}

// next returns up to max following bytes (at least one while any remain).
func (s *eodFirstStream) next(max int64) []byte {
	for len(s.queue) == 0 {
		if s.si == len(s.shards) {
			return nil
		}
		r := s.d.Shard(s.shards[s.si])
		if s.doc == r.Len() {
			s.si, s.doc = s.si+1, 0
			continue
		}
		b := r.Doc(s.doc)
		s.doc++
		if n := len(s.eod); n > 0 && len(b) >= n && string(b[len(b)-n:]) == string(s.eod) {
			s.queue = append(s.queue, s.eod)
			b = b[:len(b)-n]
		}
		if len(b) > 0 {
			s.queue = append(s.queue, b)
		}
	}
	b := s.queue[0]
	if int64(len(b)) > max {
		s.queue[0] = b[max:]
		return b[:max]
	}
	s.queue = s.queue[1:]
	return b
}

// ImportOptions describe token files to import.
type ImportOptions struct {
	Format Format
	// Tokenizer made the ids; required (nanoGPT and llm.c files do not say).
	Tokenizer TokenizerInfo
	// SplitAtEOD recovers documents at Tokenizer.EODID: nanoGPT files end a document with
	// it, llm.c files start one with it, and it is moved to the document's end (this
	// package's layout, so that ExportLLMC and Import are inverses). Without it each file
	// becomes one document.
	SplitAtEOD bool
	// Source is extra provenance for the manifest (the input files are always listed).
	Source map[string]any
}

// Import makes a dataset in dir of st from nanoGPT or llm.c token files (local paths),
// one shard per file named "<file base>_text_document", and writes its manifest last.
// Documents are not stored in those formats: see ImportOptions.SplitAtEOD.
func Import(ctx context.Context, st storage.Store, dir string, files []string, o ImportOptions) (m *Manifest, err error) {
	if o.Format != NanoGPT && o.Format != LLMC {
		return nil, fmt.Errorf("shards: import: unknown format %q (want nanogpt or llmc)", o.Format)
	}
	if len(files) == 0 {
		return nil, errors.New("shards: import: no input files")
	}
	if o.SplitAtEOD && o.Tokenizer.EODID < 0 {
		return nil, errors.New("shards: import: splitting at EOD needs the tokenizer's eod_id")
	}
	if err := checkOneDocFiles(files, o); err != nil {
		return nil, err
	}
	lock, err := storage.LockDir(ctx, st, dir, storage.LockOwner("shards import into "+keyName(st, cleanDir(dir))))
	if err != nil {
		return nil, fmt.Errorf("shards: import into %s: %w", keyName(st, cleanDir(dir)), err)
	}
	defer lock.Release()
	if _, err := st.Stat(ctx, ManifestKey(dir)); err == nil {
		return nil, fmt.Errorf("shards: import into %s: %w: it already has a %s", keyName(st, cleanDir(dir)), ErrExists, ManifestName)
	}
	src := map[string]any{}
	for k, v := range o.Source {
		src[k] = v
	}
	src["inputs"] = files
	src["imported_from"] = string(o.Format)
	var infos []ShardInfo
	defer func() {
		if err != nil {
			for _, in := range infos {
				st.Delete(context.WithoutCancel(ctx), in.Prefix+".idx")
				st.Delete(context.WithoutCancel(ctx), in.Prefix+".bin")
			}
		}
	}()
	seen := map[string]bool{}
	var open pendingDoc // a document of one llm.c file that goes on in the next
	for k, file := range files {
		prefix := strings.TrimSuffix(filepath.Base(file), ".bin") + "_text_document"
		if seen[prefix] {
			return nil, fmt.Errorf("shards: import: two inputs are named %s; rename one", filepath.Base(file))
		}
		seen[prefix] = true
		// llm.c fills each file of a split to its size, so a document runs on from one
		// file into the next of the split (NAME_SPLIT_000001.bin, _000002, ...): split
		// at EOD, it goes whole into the shard of the file where it ends.
		last := o.Format != LLMC || !o.SplitAtEOD || k+1 == len(files) || llmcSeries(files[k+1]) != llmcSeries(file)
		info, dt, err := importFile(ctx, st, join(dir, prefix), file, o, &open, last)
		if err != nil {
			return nil, err
		}
		info.Split = importSplit(o.Format, file)
		infos = append(infos, info)
		if m == nil {
			m = NewManifest(o.Tokenizer, dt, src)
			if verr := m.Validate(); verr != nil {
				return nil, fmt.Errorf("shards: import: %w: %s", ErrBadManifest, strings.ReplaceAll(verr.Error(), "\n", "; "))
			}
		} else if dt != m.DType {
			return nil, fmt.Errorf("shards: import: %w: %s holds %s tokens but %s holds %s", ErrIncompatible, file, dt, files[0], m.DType)
		}
		if err := m.Add(dir, info); err != nil {
			return nil, err
		}
	}
	if err := WriteManifest(ctx, st, dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkOneDocFiles refuses, before anything is written, a file that would be one
// document (no SplitAtEOD) of more tokens than an .idx holds (maxDocTokens): a nanoGPT
// file over 4 GiB. (An llm.c file cannot be: its header counts the tokens in an int32.)
func checkOneDocFiles(files []string, o ImportOptions) error {
	if o.SplitAtEOD || o.Format != NanoGPT {
		return nil
	}
	for _, file := range files {
		fi, err := os.Stat(file)
		if err != nil {
			continue // importFile reports it
		}
		if ntok := fi.Size() / 2; ntok > maxDocTokens {
			return formatErr(ErrTokenRange, file, -1, "", "split it into documents at the end-of-document id (--split-at-eod), or cut the file into pieces smaller than 4 GiB",
				"its %d tokens would be one document, more than the %d tokens (2^31-1) an .idx keeps for one document", ntok, maxDocTokens)
		}
	}
	return nil
}

// pendingDoc is a document that splitTokens has begun and not ended: the ids so far,
// and whether its EOD (llm.c's, at its start) goes at its end.
type pendingDoc struct {
	ids         []int
	endsWithEOD bool
}

// llmcSeries is an llm.c file's name without its directory, ".bin" and the index that
// numbers the files of a split (tiny_train_000002.bin: tiny_train).
func llmcSeries(file string) string {
	base := strings.TrimSuffix(filepath.Base(file), ".bin")
	if i := strings.LastIndexByte(base, '_'); i > 0 && strings.Trim(base[i+1:], "0123456789") == "" && i+1 < len(base) {
		return base[:i]
	}
	return base
}

// importSplit is the split a token file holds, by its name: nanoGPT's train.bin and
// val.bin, llm.c's NAME_train_NNNNNN.bin and NAME_val_NNNNNN.bin; "" (train) for other
// names.
func importSplit(f Format, file string) string {
	base := strings.TrimSuffix(filepath.Base(file), ".bin")
	if f == LLMC {
		base = llmcSeries(file)
		if i := strings.LastIndexByte(base, '_'); i >= 0 {
			base = base[i+1:]
		}
	}
	switch base {
	case "val", "test":
		return base
	}
	return ""
}

// importFile converts one token file into the shard prefix. open is the document the
// file before left open (llm.c, split at EOD), and on return the one this file leaves
// open, unless last: then it ends with the file.
func importFile(ctx context.Context, st storage.Store, prefix, file string, o ImportOptions, open *pendingDoc, last bool) (ShardInfo, DType, error) {
	f, err := os.Open(file)
	if err != nil {
		return ShardInfo{}, 0, fmt.Errorf("shards: import: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ShardInfo{}, 0, fmt.Errorf("shards: import: %w", err)
	}
	dt, ntok := Uint16, fi.Size()/2
	var body io.Reader = f
	var base int64 // the file offset of the first token
	if o.Format == NanoGPT {
		if fi.Size()%2 != 0 {
			return ShardInfo{}, 0, formatErr(ErrTruncated, file, fi.Size(), "", hintImportTruncated, "an odd number of bytes cannot be uint16 tokens")
		}
		if err := notLLMC(f, file, fi.Size()); err != nil {
			return ShardInfo{}, 0, err
		}
	} else {
		if dt, ntok, err = readLLMCHeader(f, file, fi.Size()); err != nil {
			return ShardInfo{}, 0, err
		}
		body = io.LimitReader(f, ntok*int64(dt.Size()))
		base = llmcHeaderSize
	}
	w, err := NewWriter(ctx, st, prefix, dt)
	if err != nil {
		return ShardInfo{}, 0, err
	}
	defer w.Abort()
	if int64(o.Tokenizer.VocabSize)-1 > dt.MaxID() {
		return ShardInfo{}, 0, fmt.Errorf("shards: import %s: its %s tokens cannot hold the %d ids of %s\n---> HINT: is this the file's tokenizer? (nanoGPT files are uint16: vocabularies up to 65536)", file, dt, o.Tokenizer.VocabSize, o.Tokenizer.Name)
	}
	if err := splitTokens(ctx, body, base, dt, o, file, w, open, last); err != nil {
		return ShardInfo{}, 0, err
	}
	info, err := w.Close()
	return info, dt, err
}

// hintImportTruncated is the hint for a truncated nanoGPT or llm.c file (`shards verify`,
// hintTruncated's next step, reads datasets, not these files).
const hintImportTruncated = "the file is truncated (an interrupted copy or write): restore it, or write it again (nanoGPT's data/*/prepare.py, llm.c's dev/data/*.py), then import it again"

// notLLMC refuses, as a nanoGPT file, the file f of size bytes (at offset 0, left there)
// if it is an llm.c file: its header read as tokens was imported as a document's start
// (or refused as ids outside the vocabulary, with no word of the header).
func notLLMC(f io.ReadSeeker, file string, size int64) error {
	if size < llmcHeaderSize {
		return nil
	}
	hdr := make([]byte, 12)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return fmt.Errorf("shards: import: read %s: %w", file, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("shards: import: seek %s: %w", file, err)
	}
	le := binary.LittleEndian
	magic, version, ntok := int32(le.Uint32(hdr)), int32(le.Uint32(hdr[4:])), int64(le.Uint32(hdr[8:]))
	item := int64(0)
	switch {
	case magic == llmcMagicGPT2 && version == llmcVersionGPT2:
		item = 2
	case magic == llmcMagicLlama3 && version == llmcVersionLlama3:
		item = 4
	case magic == llmcMagicEval:
		return formatErr(ErrBadMagic, file, 0, "", "this is an llm.c evaluation file (HellaSwag), not a token file", "the file starts with llm.c's evaluation magic %d", magic)
	default:
		return nil
	}
	if size != llmcHeaderSize+ntok*item {
		return nil // a nanoGPT file that happens to start so
	}
	return formatErr(ErrBadMagic, file, 0, "", "import it with --from llmc",
		"this is an llm.c token file (magic %d, version %d, %d tokens), not a headerless nanoGPT one", magic, version, ntok)
}

// readLLMCHeader checks an llm.c header and the file's size against it.
func readLLMCHeader(f io.Reader, file string, size int64) (DType, int64, error) {
	hdr := make([]byte, llmcHeaderSize)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, 0, formatErr(ErrTruncated, file, size, "header", hintImportTruncated, "shorter than llm.c's %d-byte header", llmcHeaderSize)
	}
	le := binary.LittleEndian
	magic, version, ntok := int32(le.Uint32(hdr)), int32(le.Uint32(hdr[4:])), int64(int32(le.Uint32(hdr[8:])))
	var dt DType
	switch {
	case magic == llmcMagicGPT2 && version == llmcVersionGPT2:
		dt = Uint16
	case magic == llmcMagicLlama3 && version == llmcVersionLlama3:
		dt = Int32
	case magic == llmcMagicGPT2 || magic == llmcMagicLlama3:
		return 0, 0, formatErr(ErrBadVersion, file, 4, "header[1]", "llm.c writes version 1 (GPT-2, magic 20240520) or 7 (llama-3, magic 20240801)", "version %d with magic %d", version, magic)
	case magic == llmcMagicEval:
		return 0, 0, formatErr(ErrBadMagic, file, 0, "header[0]", "this is an llm.c evaluation file (HellaSwag), not a token shard", "magic %d", magic)
	default:
		return 0, 0, formatErr(ErrBadMagic, file, 0, "header[0]", "is this an llm.c shard (dev/data/*.py)? A nanoGPT train.bin or val.bin has no header: import it with --from nanogpt", "magic %d, want %d or %d", magic, llmcMagicGPT2, llmcMagicLlama3)
	}
	if ntok < 0 {
		return 0, 0, formatErr(ErrCorrupt, file, 8, "header[2]", "the llm.c header is damaged: write the shard again (llm.c's dev/data/*.py)", "negative token count %d", ntok)
	}
	if want := llmcHeaderSize + ntok*int64(dt.Size()); size != want {
		sentinel := ErrTruncated
		if size > want {
			sentinel = ErrCorrupt
		}
		return 0, 0, formatErr(sentinel, file, size, "", hintImportTruncated, "the header says %d tokens (%d bytes in all), the file has %d bytes", ntok, want, size)
	}
	return dt, ntok, nil
}

// streamChunk is how many ids of a file imported as one document splitTokens holds
// before handing them to the Writer (512 KiB of ints).
const streamChunk = 64 << 10

// splitTokens decodes r's tokens, the first at offset base of file, and adds them to w
// as documents (see ImportOptions), after open's ids; unless last, the document still
// open at the end goes back into open for the next file.
func splitTokens(ctx context.Context, r io.Reader, base int64, dt DType, o ImportOptions, file string, w *Writer, open *pendingDoc, last bool) error {
	item := dt.Size()
	buf := make([]byte, writeBufSize)
	eod := o.Tokenizer.EODID
	eodFirst := o.Format == LLMC
	doc, endsWithEOD := open.ids, open.endsWithEOD // llm.c: the document began with EOD, which goes to its end
	*open = pendingDoc{}
	pos := base
	// Without splitting, the file is one document: it streams into w in pieces of
	// streamChunk ids rather than being held whole (Import checked its size up front).
	stream := !o.SplitAtEOD
	if stream {
		doc = make([]int, 0, streamChunk)
	}
	emit := func() error {
		if stream {
			if err := w.appendStreamed(doc); err != nil {
				return err
			}
			doc = doc[:0]
			return w.endStreamed()
		}
		if endsWithEOD {
			doc = append(doc, eod)
			endsWithEOD = false
		}
		if len(doc) == 0 {
			return nil
		}
		err := w.AddDocument(doc)
		doc = doc[:0]
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(r, buf)
		if n%item != 0 {
			return formatErr(ErrTruncated, file, pos+int64(n), "", hintImportTruncated, "ends inside a token")
		}
		for i := 0; i < n; i += item {
			var id int
			if item == 2 {
				id = int(binary.LittleEndian.Uint16(buf[i:]))
			} else {
				id = int(binary.LittleEndian.Uint32(buf[i:]))
			}
			if id >= o.Tokenizer.VocabSize {
				return formatErr(ErrTokenRange, file, pos+int64(i), "", "is this the right tokenizer for the file?",
					"token id %d is not below the vocabulary size %d of %s", id, o.Tokenizer.VocabSize, o.Tokenizer.Name)
			}
			if o.SplitAtEOD && eodFirst && id == eod {
				if err := emit(); err != nil {
					return err
				}
				endsWithEOD = true
				continue
			}
			doc = append(doc, id)
			if stream && len(doc) == streamChunk {
				if err := w.appendStreamed(doc); err != nil {
					return err
				}
				doc = doc[:0]
				continue
			}
			if o.SplitAtEOD && !eodFirst && id == eod {
				if err := emit(); err != nil {
					return err
				}
			}
			if len(doc) == math.MaxInt32 {
				return fmt.Errorf("shards: import %s: a document of more than 2^31 tokens does not fit an .idx\n---> HINT: split at the end-of-document id (--split-at-eod)", file)
			}
		}
		pos += int64(n)
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("shards: import %s: %w", file, rerr)
		}
	}
	if !last {
		*open = pendingDoc{ids: doc, endsWithEOD: endsWithEOD}
		return nil
	}
	return emit()
}
