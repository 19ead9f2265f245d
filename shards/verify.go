package shards

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"unicode/utf8"

	"gptkit/storage"
)

// Problem is one thing Verify found wrong (or, with Warning, merely odd) in one file.
type Problem struct {
	File    string // path or store key
	Warning bool   // readable, but worth knowing (a merge_file_ doc_idx, a stray shard)
	Err     error  // matches the package's sentinels (ErrChecksum, ErrTruncated, ...)
}

// String is the problem as one message (multi-line when it carries a hint).
func (p Problem) String() string {
	if p.Warning {
		return "warning: " + p.Err.Error()
	}
	return p.Err.Error()
}

// Verify checks a whole dataset: the manifest, and for every shard it names the files'
// presence, sha256, structure (as Open validates it), counts against the manifest and
// every token id against the manifest's vocabulary. It also warns about shard files in
// dir that the manifest does not name. The error is only
// for a failure to run (a cancelled ctx); a broken dataset is a non-empty problem list.
func Verify(ctx context.Context, st storage.Store, dir string, opts ...Option) ([]Problem, error) {
	m, err := ReadManifest(ctx, st, dir)
	if err != nil {
		return []Problem{{File: keyName(st, ManifestKey(dir)), Err: err}}, nil
	}
	var probs []Problem
	named := map[string]bool{}
	for i := range m.Shards {
		s := &m.Shards[i]
		named[ShardKey(dir, *s)+".bin"] = true
		named[ShardKey(dir, *s)+".idx"] = true
		p, err := VerifyShard(ctx, st, ShardKey(dir, *s), s, m.DType, append(opts, vocabOf(m))...)
		probs = append(probs, p...)
		if err != nil {
			return probs, err
		}
	}
	listPrefix := ""
	if d := cleanDir(dir); d != "" {
		listPrefix = d + "/"
	}
	infos, err := st.List(ctx, listPrefix)
	if err != nil {
		return probs, fmt.Errorf("shards: list %s: %w", keyName(st, listPrefix), err)
	}
	for _, in := range infos {
		rest := strings.TrimPrefix(in.Key, listPrefix)
		ext := path.Ext(rest)
		if strings.Contains(rest, "/") || (ext != ".bin" && ext != ".idx") || named[in.Key] {
			continue
		}
		probs = append(probs, Problem{File: keyName(st, in.Key), Warning: true, Err: formatErr(ErrMismatch, keyName(st, in.Key), -1, "",
			"delete it, or add its shard to the manifest if it belongs to the dataset",
			"not named in %s, so readers ignore it (left over from an interrupted run?)", ManifestName)})
	}
	return probs, nil
}

// VerifyShard checks the shard prefix (a key without extension). want, when not nil, is
// the shard's manifest entry (sha256s and counts to compare) and dtype, when not 0, the
// manifest's dtype. Without a manifest, VerifyShard checks the structure (use it on a bare
// GPT-NeoX prefix) and, for a signed dtype, reads the whole .bin for negative ids, which
// no tokenizer makes. With VerifyOnOpen(vocab, ...) it checks that every token id lies
// in [0, vocab).
func VerifyShard(ctx context.Context, st storage.Store, prefix string, want *ShardInfo, dtype DType, opts ...Option) ([]Problem, error) {
	var probs []Problem
	add := func(file string, warning bool, err error) {
		probs = append(probs, Problem{File: file, Warning: warning, Err: err})
	}
	idxKey, binKey := prefix+".idx", prefix+".bin"
	idxName, binName := keyName(st, idxKey), keyName(st, binKey)
	missing := false
	var binSize int64
	for _, key := range []string{idxKey, binKey} {
		info, err := st.Stat(ctx, key)
		switch {
		case errors.Is(err, storage.ErrNotExist):
			missing = true
			add(keyName(st, key), false, &FormatError{File: keyName(st, key), Offset: -1, Msg: missingMsg(st, key), Err: ErrMissing,
				Hint: "the shard is incomplete: restore the file, or re-run the stage that wrote the dataset"})
		case err != nil:
			return probs, fmt.Errorf("shards: stat %s: %w", keyName(st, key), err)
		case key == binKey:
			binSize = info.Size
		}
	}
	if missing {
		return probs, nil
	}

	// .idx: checksum and structure.
	idx, idxSum, err := readIndexObject(ctx, st, idxKey, want != nil)
	if err != nil {
		return probs, err
	}
	if want != nil && idxSum != want.IdxSHA256 {
		add(idxName, false, checksumErr(idxName, idxSum, want.IdxSHA256))
	}
	ix, perr := ParseIndex(idxName, idx, opts...)
	if perr != nil {
		binHead, _ := readHead(ctx, st, binKey, len(Magic)) // only for the hint
		add(idxName, false, swappedHint(perr, keyName(st, prefix), binHead))
	} else {
		if ix.MergedDocIdx() {
			add(idxName, true, formatErr(ErrMergedDocIdx, idxName, int64(ix.docOff), "doc_idx",
				"GPT-NeoX merge_datasets.py output; it reads as one document per sequence. `shards merge` writes a complete doc_idx",
				"doc_idx is [0] but the shard has %d sequences", ix.n))
		}
		if err := ix.CheckBinSize(binName, binSize); err != nil {
			add(binName, false, err)
		}
		if want != nil {
			if err := checkAgainstManifest(keyName(st, prefix), ix, *want, dtype); err != nil {
				for _, e := range unjoin(err) {
					add(idxName, false, e)
				}
			}
		} else if dtype != 0 && ix.dtype != dtype {
			add(idxName, false, formatErr(ErrMismatch, idxName, 17, "dtype", "", "dtype is %s, want %s", ix.dtype, dtype))
		}
	}

	// .bin: checksum (the only way to notice a flipped token) and the token ids.
	vocab := applyOptions(opts).vocab
	// A bare shard of a signed dtype, with no vocabulary to check against, still has
	// its ids checked for the one thing no tokenizer makes: a negative id (a flipped
	// sign byte), which a bare shard's "ok" let through to the trainer.
	negOnly := want == nil && vocab <= 0 && perr == nil && ix.dtype.signed()
	if negOnly {
		vocab = math.MaxInt
	}
	if want != nil || vocab > 0 {
		dt := dtype
		if perr == nil {
			dt = ix.dtype
		}
		if !dt.Valid() {
			dt = Uint8 // the checksum still counts; the ids cannot be read
			vocab = 0
		}
		s, err := scanObject(ctx, st, binKey, dt, vocab)
		if err != nil {
			return probs, err
		}
		if got := s.sum(); want != nil && got != want.BinSHA256 {
			add(binName, false, checksumErr(binName, got, want.BinSHA256))
		}
		if s.badAt >= 0 {
			var where *Index
			if perr == nil {
				where = ix
			}
			if negOnly {
				add(binName, false, vocabErrAt(binName, s.badAt, s.badID, where, vocab, "", ""))
			} else {
				add(binName, false, vocabErrAt(binName, s.badAt, s.badID, where, vocab, fmt.Sprintf("the manifest's tokenizer (vocab_size %d)", vocab), ""))
			}
		}
	}
	return probs, nil
}

// vocabOf is the option that checks ids against m's vocabulary.
func vocabOf(m *Manifest) Option {
	return func(o *options) {
		if o.vocab <= 0 || m.Tokenizer.VocabSize < o.vocab {
			o.vocab = m.Tokenizer.VocabSize
		}
	}
}

func checksumErr(name, got, want string) error {
	return formatErr(ErrChecksum, name, -1, "", "the file was modified or damaged after it was written: restore it, or re-run the stage that wrote the dataset",
		"sha256 is %s, the manifest says %s", got, want)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// readIndexObject reads the .idx at key with one Open (one GET on S3): the whole file
// when it starts with the index's magic, else only its first bytes, all ParseIndex needs
// to reject it; a file that is no index (the .bin in its place, gigabytes) is not loaded
// into memory, and its sha256 (when sum is set) is taken as a stream.
func readIndexObject(ctx context.Context, st storage.Store, key string, sum bool) (idx []byte, idxSum string, err error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, "", fmt.Errorf("shards: open %s: %w", keyName(st, key), err)
	}
	defer obj.Close()
	r := &ctxReader{ctx, obj}
	head := make([]byte, len(Magic))
	k, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, "", fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
	}
	head = head[:k]
	if string(head) == Magic {
		buf := make([]byte, max(obj.Size(), int64(k)))
		copy(buf, head)
		if _, err := io.ReadFull(r, buf[k:]); err != nil {
			return nil, "", fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
		}
		return buf, sha256Hex(buf), nil
	}
	if !sum {
		return head, "", nil
	}
	h := sha256.New()
	h.Write(head)
	if _, err := io.CopyBuffer(h, r, make([]byte, 1<<20)); err != nil {
		return nil, "", fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
	}
	return head, hex.EncodeToString(h.Sum(nil)), nil
}

// readHead is the first n bytes of key (fewer if it is shorter).
func readHead(ctx context.Context, st storage.Store, key string, n int) ([]byte, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("shards: open %s: %w", keyName(st, key), err)
	}
	defer obj.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(&ctxReader{ctx, obj}, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
	}
	return buf[:k], nil
}

// readAll reads a whole object into memory.
func readAll(ctx context.Context, st storage.Store, key string) ([]byte, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("shards: open %s: %w", keyName(st, key), err)
	}
	defer obj.Close()
	buf := make([]byte, obj.Size())
	if _, err := io.ReadFull(&ctxReader{ctx, obj}, buf); err != nil {
		return nil, fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
	}
	return buf, nil
}

// scanObject streams a .bin object of dtype through a binScan (sha256, id range, the
// first id outside [0, vocab) when vocab > 0).
func scanObject(ctx context.Context, st storage.Store, key string, dtype DType, vocab int) (*binScan, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("shards: open %s: %w", keyName(st, key), err)
	}
	defer obj.Close()
	s := newBinScan(dtype, vocab)
	if _, err := io.CopyBuffer(s, &ctxReader{ctx, obj}, make([]byte, 1<<20)); err != nil {
		return nil, fmt.Errorf("shards: read %s: %w", keyName(st, key), err)
	}
	return s, nil
}

// ctxReader stops a long read when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// CheckPresent checks, without reading them, that every shard m lists is in dir of st
// with the sizes its counts imply: the quick test that a finished dataset is still
// whole (a shard file deleted, truncated or replaced by another's). A flipped byte needs
// Verify (or VerifyOnOpen); this costs one List.
func CheckPresent(ctx context.Context, st storage.Store, dir string, m *Manifest) error {
	listPrefix := ""
	if d := cleanDir(dir); d != "" {
		listPrefix = d + "/"
	}
	// Only the keys the shards share a beginning with (the dataset's name): a dataset
	// at an S3 bucket's root listed the whole bucket.
	for i, s := range m.Shards {
		key := ShardKey(dir, s)
		if i == 0 {
			listPrefix = key
			continue
		}
		n := 0
		for n < len(listPrefix) && n < len(key) && listPrefix[n] == key[n] {
			n++
		}
		for n > 0 && n < len(key) && !utf8.RuneStart(key[n]) {
			n-- // not inside a character ("é..." and "è..." share a byte)
		}
		listPrefix = listPrefix[:n]
	}
	infos, err := st.List(ctx, listPrefix)
	if err != nil {
		return fmt.Errorf("shards: list %s: %w", keyName(st, listPrefix), err)
	}
	sizes := make(map[string]int64, len(infos))
	for _, in := range infos {
		sizes[in.Key] = in.Size
	}
	item := int64(m.DType.Size())
	for _, s := range m.Shards {
		key := ShardKey(dir, s)
		bin, hasBin := sizes[key+".bin"]
		idx, hasIdx := sizes[key+".idx"]
		switch {
		case !hasBin || !hasIdx:
			return &FormatError{File: keyName(st, key), Offset: -1, Msg: "a shard the manifest lists is missing (.bin or .idx)", Err: ErrMissing}
		case bin != s.Tokens*item:
			return formatErr(ErrTruncated, keyName(st, key+".bin"), -1, "", "", "%d bytes, the manifest's %d tokens make %d", bin, s.Tokens, s.Tokens*item)
		case idx < int64(HeaderSize)+12*s.Documents+8:
			return formatErr(ErrTruncated, keyName(st, key+".idx"), -1, "", "", "%d bytes, too few for the manifest's %d documents", idx, s.Documents)
		}
	}
	return nil
}
