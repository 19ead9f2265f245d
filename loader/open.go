package loader

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gptkit/shards"
	"gptkit/storage"
)

// DefaultSplit is the split Open uses when Options.Split is empty: GPT-NeoX's
// default.
const DefaultSplit = "969,30,1"

// Options says which data a run reads and how its samples are built.
type Options struct {
	// Data is a dataset directory (holding manifest.json), s3://bucket/prefix, a
	// bare GPT-NeoX PREFIX (PREFIX.bin and PREFIX.idx, no manifest), a blend file
	// FILE.yaml, or an inline blend "0.7:dirA,0.3:dirB" (see ParseData).
	Data string
	// SeqLen is L; every sample has L+1 tokens.
	SeqLen int
	// Seed is the shuffle seed (GPT-NeoX's seed, default 1234).
	Seed uint32
	// Order is OrderDefault or OrderNeoX ("" means OrderDefault).
	Order string
	// Split divides an unsplit dataset's documents into train, valid and test, as
	// GPT-NeoX's split ("969,30,1"; "" means DefaultSplit). It is not used for
	// datasets whose manifest labels shards train/val/test, nor for a blend file
	// that lists separate valid and test datasets.
	Split string
	// NumSamples is how many samples to build for train, valid and test (0: that
	// split is not built). GPT-NeoX: train_iters*train_batch_size for train.
	NumSamples [3]int64
	// CacheDir keeps local copies of S3 shards and the index files of data that
	// cannot take them beside it ("" means storage.DefaultCacheDir()).
	CacheDir string
	// VocabSize, when positive, is the vocabulary every token id must lie below (the
	// model's); a manifest's tokenizer vocabulary, when smaller, is checked instead.
	// Open checks every shard before it returns (shards.VerifyOnOpen): its sha256
	// against the manifest and its ids, once per file version (remembered in CacheDir).
	VocabSize int
	// Manifests are manifests of Data's datasets the caller has read already (to
	// check the data's tokenizer before opening it), by the dataset's location as
	// ParseData gives it (WeightedPath.Path): Open uses them and does not read them
	// again (on S3, one GET less). A dataset not in it has its manifest read.
	Manifests map[string]*shards.Manifest
	// S3Endpoint and S3PathStyle are passed to storage.Open for s3:// data.
	S3Endpoint  string
	S3PathStyle bool
	// Logger receives one Info line per index (built or reused, where, how long)
	// and warnings about damaged cache files; nil discards them.
	Logger *slog.Logger
}

// EmptySplitError is Open's error when samples are asked of a split (Train, Valid or
// Test) that the data has no documents for, so that callers can suggest asking for none.
type EmptySplitError struct {
	Split int // Train, Valid or Test
	msg   string
}

func (e *EmptySplitError) Error() string { return e.msg }

// errNoTokens: a split's documents are all empty.
var errNoTokens = errors.New("loader: the split's documents hold no tokens")

// Data is an opened run's data: one Source per split.
type Data struct {
	// Train, Valid and Test are the splits' samples; nil when a split was not
	// asked for (NumSamples 0). Each is a *Samples, or a *Blend for a weighted
	// Data.
	Train, Valid, Test Source
	// Tokenizer identifies the tokenizer of the data, from the manifests (zero
	// for bare GPT-NeoX shards, which do not record it). Open refuses blends of
	// datasets whose fingerprints differ.
	Tokenizer shards.TokenizerInfo
	// Spec is the parsed Options.Data.
	Spec *DataSpec
	// IndexFiles are the index cache files used, per split and dataset.
	IndexFiles []string
	// DataKeys are, per split (Train, Valid, Test), a SHA-256 (hex) of the data its
	// samples are drawn from: each dataset's contents (its manifest's shard checksums,
	// or a bare shard's .idx hash and .bin size) and, for a blend, the normalized
	// weights; "" for a split not built. With the order, seed, L, split and sample
	// count it determines the split's samples, so a run resumed on re-made shards or
	// another blend can tell (the dataset's location is not part of it).
	DataKeys [3]string
	// SplitUsed reports whether Options.Split divided some dataset's documents
	// (false when every dataset is presplit or the splits are listed apart): only
	// then does a change of the split change the samples.
	SplitUsed bool

	sets []*dataSet
}

// Split returns split k's source (Train, Valid or Test).
func (d *Data) Split(k int) Source { return [3]Source{d.Train, d.Valid, d.Test}[k] }

// Close unmaps every shard. Sources must not be used afterwards.
func (d *Data) Close() error {
	var errs []error
	for _, s := range d.sets {
		errs = append(errs, s.close())
	}
	d.sets = nil
	return errors.Join(errs...)
}

// Open opens the data o names, builds (or reuses from the index cache) the index of
// every split o asks samples for, and returns the splits as Sources.
func Open(ctx context.Context, o Options) (_ *Data, err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheDir == "" {
		o.CacheDir = storage.DefaultCacheDir()
	}
	if o.Order, err = CheckOrder(o.Order); err != nil {
		return nil, err
	}
	if o.Split == "" {
		o.Split = DefaultSplit
	}
	split, err := ParseSplit(o.Split)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	if o.SeqLen < 1 {
		return nil, fmt.Errorf("loader: sequence length %d, want >= 1", o.SeqLen)
	}
	if o.NumSamples == [3]int64{} {
		return nil, errors.New("loader: no samples asked for (set NumSamples for train, valid or test)")
	}
	for k, n := range o.NumSamples {
		if n < 0 {
			return nil, fmt.Errorf("loader: %d %s samples asked for", n, SplitNames[k])
		}
	}
	spec, err := ParseData(o.Data)
	if err != nil {
		return nil, err
	}
	d := &Data{Spec: spec}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	opened := map[string]*dataSet{}
	open := func(p string) (*dataSet, error) {
		if s := opened[p]; s != nil {
			return s, nil
		}
		s, err := openDataSet(ctx, p, o)
		if err != nil {
			return nil, err
		}
		opened[p] = s
		d.sets = append(d.sets, s)
		return s, nil
	}
	separate := len(spec.Valid) > 0 || len(spec.Test) > 0
	warnedDup := false
	lists := [3][]WeightedPath{spec.Train, spec.Train, spec.Train}
	if separate {
		lists = [3][]WeightedPath{spec.Train, spec.Valid, spec.Test}
	}
	for k := range 3 {
		n := o.NumSamples[k]
		if n == 0 {
			continue
		}
		list := lists[k]
		if len(list) == 0 {
			return nil, &EmptySplitError{Split: k, msg: fmt.Sprintf("loader: %d %s samples asked for, but %s lists no %s datasets", n, SplitNames[k], o.Data, SplitNames[k])}
		}
		counts := []int64{n}
		var weights []float64
		if spec.Blended {
			for _, wp := range list {
				weights = append(weights, wp.Weight)
			}
			if weights, counts, err = NeoXBlendWeights(weights, n); err != nil {
				return nil, err
			}
		}
		var srcs []Source
		seen := map[string]string{} // a dataset's identity: the first entry's path
		dataKey := sha256.New()
		fmt.Fprintf(dataKey, "gptkit loader data\nblended=%t\n", spec.Blended)
		for c, wp := range list {
			set, err := open(wp.Path)
			if err != nil {
				return nil, blendEntryErr(o.Data, separate, k, c, wp.Path, err)
			}
			if spec.Blended {
				fmt.Fprintf(dataKey, "weight=%s\n", strconv.FormatFloat(weights[c], 'g', -1, 64))
			}
			fmt.Fprintf(dataKey, "%s--\n", set.identity)
			if first, dup := seen[set.identity]; dup && spec.Blended && !warnedDup {
				// Each entry's index is built with the same seed: the same samples in
				// the same order, so the blend reads each sample twice, back to back.
				warnedDup = true
				o.Logger.Warn("loader: a blend lists one dataset twice: its entries draw the same samples in the same order (the same seed), so each sample is read twice, one after the other; list it once, with the weights summed",
					"data", o.Data, "first", first, "again", wp.Path)
			}
			seen[set.identity] = wp.Path
			docs := [2]int64{0, set.numDocs}
			splitName := "whole"
			if separate {
				// Listed for one split: used whole (GPT-NeoX's *_data_paths), except
				// a dataset whose manifest labels its shards by split, whose other
				// splits' documents must not leak in (its val shards into training).
				all, presplit, err := SplitDocuments(set.manifest, set.numDocs, split)
				if err != nil {
					return nil, fmt.Errorf("loader: %s: %w", wp.Path, err)
				}
				if presplit {
					docs, splitName = all[k], SplitNames[k]+" shards"
					if docs[0] == docs[1] {
						return nil, &EmptySplitError{Split: k, msg: fmt.Sprintf("loader: %s is listed for %s, but its manifest labels no shard %s (it has split labels, so only its %s shards are used there): list it where its shards are, or list a dataset without split labels (used whole)", wp.Path, SplitNames[k], SplitNames[k], SplitNames[k])}
					}
				}
			} else {
				all, presplit, err := SplitDocuments(set.manifest, set.numDocs, split)
				if err != nil {
					return nil, fmt.Errorf("loader: %s: %w", wp.Path, err)
				}
				docs, splitName = all[k], SplitNames[k]+" of "+o.Split
				if presplit {
					splitName = SplitNames[k] + " shards"
				} else {
					d.SplitUsed = true
				}
				if docs[0] == docs[1] {
					how, next := "split "+o.Split+" gives it none", "or change the split"
					if presplit {
						how, next = "its manifest labels no shard "+SplitNames[k], "or make the dataset with a "+SplitNames[k]+" split (the split setting applies only to a dataset without one)"
					}
					return nil, &EmptySplitError{Split: k, msg: fmt.Sprintf("loader: %s: no %s documents (%d documents; %s): ask for no %s samples, %s", wp.Path, SplitNames[k], set.numDocs, how, SplitNames[k], next)}
				}
			}
			s, file, err := set.samples(ctx, o, k, splitName, docs, counts[c])
			if errors.Is(err, errNoTokens) {
				return nil, &EmptySplitError{Split: k, msg: fmt.Sprintf("loader: %s: its %d %s documents are all empty (no tokens): ask for no %s samples, or give the dataset documents with text", wp.Path, docs[1]-docs[0], SplitNames[k], SplitNames[k])}
			}
			if err != nil {
				return nil, fmt.Errorf("loader: %s: %s split: %w", wp.Path, SplitNames[k], err)
			}
			d.IndexFiles = append(d.IndexFiles, file)
			srcs = append(srcs, s)
			if !spec.Blended {
				warnRepeats(o, k, set.name, s.Index, n, n)
			}
		}
		d.DataKeys[k] = fmt.Sprintf("%x", dataKey.Sum(nil))
		var src Source = srcs[0]
		if spec.Blended {
			b, err := openBlend(ctx, o, k, list, srcs, weights)
			if err != nil {
				return nil, err
			}
			if k != Train {
				// Each dataset's index is sized for ceil(w·N·1.005) samples
				// (GPT-NeoX's margin): what the first N blended samples read of
				// it, not that, is what repeats.
				read := make([]int64, len(srcs))
				for i := range min(n, b.Len()) {
					c, j := b.Locate(i)
					read[c] = max(read[c], j+1)
				}
				for c, src := range srcs {
					warnRepeats(o, k, list[c].Path, src.(*Samples).Index, read[c], n)
				}
			}
			src = b
		}
		switch k {
		case Train:
			d.Train = src
		case Valid:
			d.Valid = src
		case Test:
			d.Test = src
		}
	}
	if d.Tokenizer, err = commonTokenizer(d.sets, o.Logger); err != nil {
		return nil, err
	}
	return d, nil
}

// commonTokenizer is the tokenizer of the opened datasets' manifests; it fails
// when two fingerprints differ (mixing ids of different vocabularies).
func commonTokenizer(sets []*dataSet, log *slog.Logger) (shards.TokenizerInfo, error) {
	var tok shards.TokenizerInfo
	var from string
	for _, s := range sets {
		if s.manifest == nil {
			if len(sets) > 1 {
				log.Warn("loader: bare GPT-NeoX shards record no tokenizer; make sure they use the blend's", "data", s.name)
			}
			continue
		}
		t := s.manifest.Tokenizer
		switch {
		case from == "":
			tok, from = t, s.name
		case t.Fingerprint != tok.Fingerprint:
			return tok, fmt.Errorf("loader: %s and %s were tokenized differently (tokenizer %s, fingerprint %s vs %s, fingerprint %s): blend datasets of one tokenizer",
				from, s.name, tok.Name, tok.Fingerprint, t.Name, t.Fingerprint)
		}
	}
	return tok, nil
}

// dataSet is one opened location: a manifest dataset or a bare shard.
type dataSet struct {
	name     string
	manifest *shards.Manifest // nil for a bare shard
	readers  []*shards.Reader
	numDocs  int64
	identity string // the data's part of index cache keys
	close    func() error

	// Index files go to next (beside the data; nil for S3) under nextPrefix,
	// else to CacheDir.
	next       storage.Store
	nextPrefix string
}

// openDataSet opens location p (see Options.Data).
func openDataSet(ctx context.Context, p string, o Options) (*dataSet, error) {
	sopts := storage.Options{S3Endpoint: o.S3Endpoint, S3PathStyle: o.S3PathStyle, Logger: o.Logger}
	if strings.HasPrefix(p, "s3://") {
		st, err := storage.Open(ctx, p, sopts)
		if err != nil {
			return nil, fmt.Errorf("loader: open %s: %w", p, err)
		}
		set, err := openManifestSet(ctx, p, st, nil, o)
		if errors.Is(err, shards.ErrMissing) {
			err = fmt.Errorf("%w%s", err, subdirHint(ctx, p, st))
		}
		return set, err
	}
	local := strings.TrimPrefix(p, "file://")
	if strings.Contains(local, "://") {
		return nil, fmt.Errorf("loader: %s: unsupported scheme (want a directory, s3://bucket/prefix or a PREFIX of PREFIX.bin/.idx)", p)
	}
	if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(local, shards.ManifestName)); err != nil {
			hint := ""
			if inside, _ := filepath.Glob(filepath.Join(local, "*", shards.ManifestName)); len(inside) > 0 {
				// `prep NAME -d DIR` makes DIR/NAME: the dataset is one level down.
				var names []string
				for _, m := range inside[:min(len(inside), 3)] {
					names = append(names, filepath.Dir(m))
				}
				hint = "\n---> HINT: the datasets are in its subdirectories: pass one of them, e.g. --data " + strings.Join(names, " or ")
			}
			return nil, fmt.Errorf("loader: %s is a directory without %s: want a dataset directory, or pass a PREFIX of PREFIX.bin/.idx%s", p, shards.ManifestName, hint)
		}
		st, err := storage.Open(ctx, local, sopts)
		if err != nil {
			return nil, fmt.Errorf("loader: open %s: %w", p, err)
		}
		return openManifestSet(ctx, p, st, st, o)
	}
	prefix := strings.TrimSuffix(strings.TrimSuffix(local, ".bin"), ".idx")
	_, errI := os.Stat(prefix + ".idx")
	_, errB := os.Stat(prefix + ".bin")
	if errI != nil || errB != nil {
		if errI != nil && errB != nil {
			return nil, fmt.Errorf("loader: %s: no such dataset (neither a directory with %s nor a PREFIX with PREFIX.bin and PREFIX.idx)\n---> HINT: make one with `prep NAME -d DIR` (prep list names them; the dataset is DIR/NAME) or `tokenize run`", p, shards.ManifestName)
		}
		return nil, fmt.Errorf("loader: %s: a bare shard needs both %s.bin and %s.idx", p, prefix, prefix)
	}
	return openBareSet(ctx, p, prefix, sopts, o)
}

// subdirHint says which datasets are one level below p (`prep NAME -d s3://B/P` makes
// s3://B/P/NAME), as a directory's error does: "" when none is, or the listing fails.
func subdirHint(ctx context.Context, p string, st storage.Store) string {
	infos, err := st.List(ctx, "")
	if err != nil {
		return ""
	}
	var names []string
	for _, in := range infos {
		if dir, file := path.Split(in.Key); file == shards.ManifestName && strings.Count(dir, "/") == 1 && len(names) < 3 {
			names = append(names, strings.TrimSuffix(p, "/")+"/"+strings.TrimSuffix(dir, "/"))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "\n---> HINT: the datasets are in its subfolders: pass one of them, e.g. --data " + strings.Join(names, " or ")
}

func openManifestSet(ctx context.Context, p string, st, next storage.Store, o Options) (*dataSet, error) {
	ds, err := shards.OpenDataset(ctx, st, "", o.CacheDir, shards.VerifyOnOpen(o.VocabSize, o.CacheDir), shards.WithManifest(o.Manifests[p]))
	if err != nil {
		return nil, fmt.Errorf("loader: open dataset %s: %w", p, err)
	}
	var id strings.Builder
	fmt.Fprintf(&id, "dataset dtype=%s\n", ds.Manifest.DType)
	for _, s := range ds.Manifest.Shards {
		fmt.Fprintf(&id, "shard %q split=%q documents=%d tokens=%d bin=%s idx=%s\n", s.Prefix, s.Split, s.Documents, s.Tokens, s.BinSHA256, s.IdxSHA256)
	}
	return &dataSet{
		name: p, manifest: ds.Manifest, readers: datasetReaders(ds), numDocs: ds.Len(),
		identity: id.String(), close: ds.Close, next: next, nextPrefix: cacheDirName + "/",
	}, nil
}

// openBareSet opens a GPT-NeoX PREFIX.bin/PREFIX.idx pair. With no manifest to
// name its checksums, the index cache key takes the SHA-256 of the .idx (which
// holds every document size, all an index depends on) and the .bin's size.
func openBareSet(ctx context.Context, p, prefix string, sopts storage.Options, o Options) (*dataSet, error) {
	r, err := shards.Open(prefix, shards.AllowMergedDocIdx(), shards.VerifyOnOpen(o.VocabSize, o.CacheDir))
	if err != nil {
		return nil, fmt.Errorf("loader: open %s: %w", p, err)
	}
	idx, err := os.ReadFile(prefix + ".idx")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("loader: read %s.idx: %w", prefix, err)
	}
	sum := sha256.Sum256(idx)
	id := fmt.Sprintf("bare dtype=%s documents=%d tokens=%d idx=%x bin_size=%d\n", r.DType(), r.Len(), r.NumTokens(), sum, len(r.Bin()))
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	next, err := storage.Open(ctx, dir, sopts)
	if err != nil {
		next = nil // the index goes to CacheDir
	}
	return &dataSet{
		name: p, readers: []*shards.Reader{r}, numDocs: int64(r.Len()),
		identity: id, close: r.Close, next: next, nextPrefix: cacheDirName + "/" + base + ".",
	}, nil
}

// indexMeta is the metadata of an index cache file (for people reading it; the
// key is what identifies the inputs).
type indexMeta struct {
	Data           string   `json:"data"`
	Split          string   `json:"split"`
	Docs           [2]int64 `json:"docs"`
	Order          string   `json:"order"`
	SeqLen         int      `json:"seq_len"`
	NumSamples     int64    `json:"num_samples"`
	Seed           uint32   `json:"seed"`
	TokensPerEpoch int64    `json:"tokens_per_epoch"`
	Epochs         int      `json:"epochs"`
}

// samples returns the Samples of split k (documents docs) of s, with its index
// from the cache or built and cached, and the cache file's path.
func (s *dataSet) samples(ctx context.Context, o Options, k int, splitName string, docs [2]int64, n int64) (*Samples, string, error) {
	sm, err := newSamples(s.readers, docs)
	if err != nil {
		return nil, "", err
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("gptkit loader index v%d\norder=%s\nseq_len=%d\nseed=%d\nnum_samples=%d\nsplit=%s %s docs=%d,%d\n%s",
		cacheVersion, o.Order, o.SeqLen, o.Seed, n, SplitNames[k], splitName, docs[0], docs[1], s.identity)))
	name := fmt.Sprintf("%s_%s_%dns_%dsl_%ds_%x.gkidx", SplitNames[k], o.Order, n, o.SeqLen, o.Seed, key[:12])
	var x *Index
	file, err := cached(ctx, o, s.next, s.nextPrefix+name, name, key, 3,
		func(meta []byte, arrays []cacheArray) error {
			var m indexMeta
			if err := jsonUnmarshal(meta, &m); err != nil {
				return err
			}
			if m.Order != o.Order || m.SeqLen != o.SeqLen || m.NumSamples != n || m.Seed != o.Seed {
				return fmt.Errorf("metadata %+v does not match the inputs", m)
			}
			x = &Index{Order: m.Order, SeqLen: m.SeqLen, NumSamples: m.NumSamples, Seed: m.Seed, TokensPerEpoch: m.TokensPerEpoch, Epochs: m.Epochs,
				DocIdx: fromBytes[int32](arrays[0].data), SampleIdx: fromBytes[int32](arrays[1].data), ShuffleIdx: fromBytes[uint32](arrays[2].data)}
			return checkIndex(x, sm.sizes)
		},
		func() (any, []cacheArray, error) {
			var err error
			if x, err = BuildIndex(o.Order, sm.sizes, o.SeqLen, n, o.Seed); err != nil {
				return nil, nil, err
			}
			m := indexMeta{Data: s.name, Split: splitName, Docs: docs, Order: x.Order, SeqLen: x.SeqLen, NumSamples: x.NumSamples,
				Seed: x.Seed, TokensPerEpoch: x.TokensPerEpoch, Epochs: x.Epochs}
			return m, []cacheArray{{4, asBytes(x.DocIdx)}, {4, asBytes(x.SampleIdx)}, {4, asBytes(x.ShuffleIdx)}}, nil
		})
	if err != nil {
		return nil, "", err
	}
	sm.Order, sm.Index = x.Order, x
	o.Logger.Info("loader: index", "data", s.name, "split", SplitNames[k], "order", x.Order, "samples", x.Len(), "epochs", x.Epochs, "file", file)
	return sm, file, nil
}

// warnRepeats warns where an evaluation split (k not Train) reads past one epoch of
// a dataset's samples: read of them (asked in all), the dataset named name.
// Training for several epochs is common; an evaluation of several is the same
// samples counted again, unevenly (the last epoch in part), which no one asks for.
func warnRepeats(o Options, k int, name string, x *Index, read, asked int64) {
	if perEpoch := (x.TokensPerEpoch - 1) / int64(x.SeqLen); k != Train && x.Epochs > 1 && read > perEpoch {
		o.Logger.Warn("loader: the "+SplitNames[k]+" split holds fewer samples than asked for: they repeat, some counted more often than others (ask for fewer: train's eval_steps x batch_size x ranks)",
			"data", name, "samples_per_epoch", perEpoch, "asked", asked, "epochs", x.Epochs)
	}
}

// checkIndex checks that a cached index fits the documents it is used with, so
// that a file that passed its checksum but is inconsistent cannot index out of
// range.
func checkIndex(x *Index, sizes []int32) error {
	_, epochs, n, err := numEpochs(sizes, x.SeqLen, x.NumSamples)
	switch {
	case err != nil:
		return err
	case int64(x.Epochs) != epochs || int64(len(x.DocIdx)) != epochs*int64(len(sizes)) ||
		int64(len(x.SampleIdx)) != 2*(n+1) || int64(len(x.ShuffleIdx)) != n:
		return fmt.Errorf("array lengths do not match %d epochs of %d documents", epochs, len(sizes))
	}
	for _, d := range x.DocIdx {
		if d < 0 || int(d) >= len(sizes) {
			return fmt.Errorf("doc_idx holds %d, outside [0,%d)", d, len(sizes))
		}
	}
	for _, j := range x.ShuffleIdx {
		if int64(j) >= n {
			return fmt.Errorf("shuffle_idx holds %d, outside [0,%d)", j, n)
		}
	}
	// Each sample_idx entry is a token of the stream of documents doc_idx orders, and
	// each starts SeqLen tokens after the one before (a sample is SeqLen+1 tokens,
	// sharing its last with the next one's first): in range one by one is not enough,
	// AppendSpans would make spans of negative or excess length from entries out of
	// step. starts[p] is the stream position of doc_idx[p]'s first token.
	starts := make([]int64, len(x.DocIdx)+1)
	for p, d := range x.DocIdx {
		starts[p+1] = starts[p] + int64(sizes[d])
	}
	prev := int64(0)
	for k := int64(0); k <= n; k++ {
		p, off := x.SampleIdx[2*k], x.SampleIdx[2*k+1]
		if p < 0 || int(p) >= len(x.DocIdx) || off < 0 || off >= max(sizes[x.DocIdx[p]], 1) {
			return fmt.Errorf("sample_idx entry %d (%d,%d) is outside the documents", k, p, off)
		}
		at := starts[p] + int64(off)
		if k > 0 && at-prev != int64(x.SeqLen) {
			return fmt.Errorf("sample_idx entry %d (%d,%d) is %d tokens after the one before, not %d", k, p, off, at-prev, x.SeqLen)
		}
		prev = at
	}
	return nil
}

// blendMeta is the metadata of a blend cache file.
type blendMeta struct {
	Data    []string  `json:"data"`
	Split   string    `json:"split"`
	Weights []float64 `json:"weights"`
	Size    int64     `json:"size"`
}

// openBlend blends split k's sources, with the blend index from CacheDir or built
// and cached there.
func openBlend(ctx context.Context, o Options, k int, list []WeightedPath, srcs []Source, weights []float64) (*Blend, error) {
	var size int64
	var id strings.Builder
	fmt.Fprintf(&id, "gptkit loader blend v%d\nsplit=%s\n", cacheVersion, SplitNames[k])
	for c, s := range srcs {
		size += s.Len()
		sm := s.(*Samples)
		fmt.Fprintf(&id, "weight=%s len=%d index=%s\n", strconv.FormatFloat(weights[c], 'g', -1, 64), s.Len(), sm.Index.Order)
	}
	for _, wp := range list {
		fmt.Fprintf(&id, "data=%q\n", wp.Path)
	}
	// The sources' index files are named by keys over everything else.
	key := sha256.Sum256([]byte(id.String() + strings.Join(indexNames(srcs), "\n")))
	name := fmt.Sprintf("blend_%s_%dds_%dsize_%x.gkidx", SplitNames[k], len(srcs), size, key[:12])
	var di []uint8
	var si []int64
	_, err := cached(ctx, o, nil, "", name, key, 2,
		func(meta []byte, arrays []cacheArray) error {
			di, si = fromBytes[uint8](arrays[0].data), fromBytes[int64](arrays[1].data)
			if int64(len(di)) != size || int64(len(si)) != size {
				return fmt.Errorf("%d and %d entries, want %d", len(di), len(si), size)
			}
			return nil
		},
		func() (any, []cacheArray, error) {
			var err error
			if di, si, err = BlendNeoX(weights, size); err != nil {
				return nil, nil, err
			}
			var paths []string
			for _, wp := range list {
				paths = append(paths, wp.Path)
			}
			return blendMeta{Data: paths, Split: SplitNames[k], Weights: weights, Size: size}, []cacheArray{{1, asBytes(di)}, {8, asBytes(si)}}, nil
		})
	if err != nil {
		return nil, err
	}
	return newBlend(srcs, weights, di, si)
}

// indexNames describes each source's index for the blend key.
func indexNames(srcs []Source) []string {
	var out []string
	for _, s := range srcs {
		sm := s.(*Samples)
		x := sm.Index
		out = append(out, fmt.Sprintf("docs=%d,%d order=%s L=%d n=%d seed=%d tpe=%d shuffle=%d", sm.Docs[0], sm.Docs[1], x.Order, x.SeqLen, x.NumSamples, x.Seed, x.TokensPerEpoch, len(x.ShuffleIdx)))
	}
	return out
}

// cached loads the cache file of key, trying next/nextName (beside the data) and
// then CacheDir/index-cache/name, and calls load with its contents; when neither
// holds a usable file it calls build and publishes the result beside the data,
// or, when that fails (read-only data, S3), under CacheDir. A damaged file is
// logged and rebuilt. It returns the file's path.
func cached(ctx context.Context, o Options, next storage.Store, nextName, name string, key [32]byte, arrays int,
	load func(meta []byte, arrays []cacheArray) error, build func() (any, []cacheArray, error)) (string, error) {
	start := time.Now()
	var fallback storage.Store
	openFallback := func() (storage.Store, error) {
		if fallback == nil {
			var err error
			if fallback, err = storage.Open(ctx, o.CacheDir, storage.Options{Logger: o.Logger}); err != nil {
				return nil, err
			}
		}
		return fallback, nil
	}
	type place struct {
		st   storage.Store
		name string
	}
	var places []place
	if next != nil {
		places = append(places, place{next, nextName})
	}
	if _, err := os.Stat(filepath.Join(o.CacheDir, cacheDirName)); err == nil {
		if fb, err := openFallback(); err == nil {
			places = append(places, place{fb, cacheDirName + "/" + name})
		}
	}
	for _, pl := range places {
		meta, arr, ok, err := readCacheFile(ctx, pl.st, pl.name, key, arrays)
		if err == nil && ok {
			if err = load(meta, arr); err == nil {
				o.Logger.Debug("loader: reused index cache", "file", pl.st.String()+"/"+pl.name, "ms", time.Since(start).Milliseconds())
				return filepath.Join(pl.st.String(), pl.name), nil
			}
			err = fmt.Errorf("%w %s/%s: %v (it is rebuilt)", errCorrupt, pl.st, pl.name, err)
		}
		if err != nil {
			o.Logger.Warn("loader: index cache file unusable", "err", err)
		}
	}
	meta, arr, err := build()
	if err != nil {
		return "", err
	}
	b, err := encodeCache(key, meta, arr)
	if err != nil {
		return "", fmt.Errorf("loader: encode index cache %s: %w", name, err)
	}
	built := time.Since(start)
	if next != nil {
		err := writeCacheFile(ctx, next, nextName, b)
		if err == nil {
			o.Logger.Debug("loader: built index", "file", next.String()+"/"+nextName, "ms", built.Milliseconds())
			return filepath.Join(next.String(), nextName), nil
		}
		o.Logger.Debug("loader: cannot write the index beside the data; using the cache directory", "err", err)
	}
	fb, err := openFallback()
	if err == nil {
		err = writeCacheFile(ctx, fb, cacheDirName+"/"+name, b)
	}
	if err != nil {
		// The cache only saves time: run without it.
		o.Logger.Warn("loader: cannot write the index cache (the index is rebuilt next time)", "dir", o.CacheDir, "err", err)
		return "", nil
	}
	return filepath.Join(fb.String(), cacheDirName, name), nil
}

// blendEntryErr names the blend file and entry of a dataset that did not open
// (err alone names only the path, joined with the file's directory): for data that
// is not a blend file it returns err as it is.
func blendEntryErr(data string, separate bool, split, entry int, path string, err error) error {
	if !strings.HasSuffix(data, ".yaml") && !strings.HasSuffix(data, ".yml") {
		return err
	}
	key := "datasets"
	if separate {
		key = [3]string{"datasets", "valid", "test"}[split]
	}
	where := ""
	if dir := filepath.Dir(data); dir != "." && strings.HasPrefix(path, dir+string(filepath.Separator)) {
		where = " (relative paths in a blend file are relative to its directory, " + filepath.Dir(data) + ")"
	}
	return &wrapped{msg: fmt.Sprintf("loader: blend file %s: %s[%d]%s: %s", data, key, entry, where, strings.TrimPrefix(err.Error(), "loader: ")), err: err}
}

// wrapped is err with another message (its own, rewritten), still matching err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
