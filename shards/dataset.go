package shards

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"

	"golang.org/x/sync/errgroup"

	"gptkit/storage"
)

// Dataset is an open dataset: its manifest and every shard it names, in order, with one
// global document index running across the shards.
type Dataset struct {
	Manifest *Manifest
	Dir      string // the dataset's directory in its store

	shards []*Reader
	starts []int64 // starts[s]: global index of shard s's first document; last = Len()
}

// OpenDataset reads dir's manifest and opens its shards (see OpenStore: local stores are
// mapped in place, others through verified copies in cacheDir). Each shard's documents,
// tokens and dtype must match the manifest; checksums and token ids are checked with
// VerifyOnOpen (the loader's way), else by Verify. WithManifest gives the manifest
// already read.
func OpenDataset(ctx context.Context, st storage.Store, dir, cacheDir string, opts ...Option) (d *Dataset, err error) {
	o := applyOptions(opts)
	m := o.manifest
	if m == nil {
		if m, err = ReadManifest(ctx, st, dir); err != nil {
			return nil, err
		}
	}
	d = &Dataset{Manifest: m, Dir: dir, starts: []int64{0}}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	vocab := m.Tokenizer.VocabSize
	if o.vocab > 0 && (vocab <= 0 || o.vocab < vocab) {
		vocab = o.vocab
	}
	if o.cacheDir == "" {
		o.cacheDir = cacheDir
	}
	cache := newVerifiedCache(o.cacheDir)
	for _, s := range m.Shards {
		r, err := OpenStore(ctx, st, ShardKey(dir, s), cacheDir, s.BinSHA256, s.IdxSHA256, opts...)
		if err != nil {
			return d, err
		}
		d.shards = append(d.shards, r)
		if err := checkAgainstManifest(r.Name(), r.ix, s, m.DType); err != nil {
			return d, err
		}

		d.starts = append(d.starts, d.starts[len(d.starts)-1]+int64(r.Len()))
	}
	if o.verify {
		// Shards are checked in parallel (hashing is what takes the time, one core per
		// file); the first problem in manifest order is the one reported.
		errs := make([]error, len(d.shards))
		var g errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		for i, r := range d.shards {
			g.Go(func() error {
				errs[i] = r.verifyData(ctx, r.binPath, &m.Shards[i], vocab, vocabWhat(m, vocab), m, cache)
				return nil
			})
		}
		g.Wait()
		for _, err := range errs {
			if err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// checkAgainstManifest compares a shard's index with its manifest entry.
func checkAgainstManifest(name string, ix *Index, s ShardInfo, dtype DType) error {
	var errs []error
	hint := "the shard files and the manifest do not belong together: re-run the stage that wrote the dataset"
	if ix.dtype != dtype {
		errs = append(errs, formatErr(ErrMismatch, name+".idx", 17, "dtype", hint, "dtype is %s, the manifest says %s", ix.dtype, dtype))
	}
	if int64(ix.n) != s.Documents {
		errs = append(errs, formatErr(ErrMismatch, name+".idx", 18, "n_seq", hint, "%d documents, the manifest says %d", ix.n, s.Documents))
	}
	if ix.tokens != s.Tokens {
		errs = append(errs, formatErr(ErrMismatch, name+".idx", -1, "sizes", hint, "%d tokens, the manifest says %d", ix.tokens, s.Tokens))
	}
	return errors.Join(errs...)
}

// Close unmaps every shard.
func (d *Dataset) Close() error {
	var errs []error
	for _, r := range d.shards {
		errs = append(errs, r.Close())
	}
	d.shards = nil
	return errors.Join(errs...)
}

// DType is the token type of every shard.
func (d *Dataset) DType() DType { return d.Manifest.DType }

// Len is the number of documents in all shards.
func (d *Dataset) Len() int64 { return d.starts[len(d.starts)-1] }

// NumTokens is the number of tokens in all shards.
func (d *Dataset) NumTokens() int64 { return d.Manifest.Tokens }

// NumShards is the number of shards.
func (d *Dataset) NumShards() int { return len(d.shards) }

// Shard is shard s, in manifest order.
func (d *Dataset) Shard(s int) *Reader { return d.shards[s] }

// Locate maps global document i to a shard and the document's index in it. It panics if
// i is out of range, like a slice index.
func (d *Dataset) Locate(i int64) (shard, local int) {
	if i < 0 || i >= d.Len() {
		panic(fmt.Sprintf("shards: dataset %s: document %d out of range [0,%d)", d.Dir, i, d.Len()))
	}
	s := sort.Search(len(d.shards), func(s int) bool { return d.starts[s+1] > i })
	return s, int(i - d.starts[s])
}

// Doc returns global document i's raw token bytes (see Reader.Doc).
func (d *Dataset) Doc(i int64) []byte {
	s, j := d.Locate(i)
	return d.shards[s].Doc(j)
}

// Size is the number of tokens of global document i.
func (d *Dataset) Size(i int64) int {
	s, j := d.Locate(i)
	return d.shards[s].Size(j)
}

// Tokens returns a copy of global document i's tokens.
func (d *Dataset) Tokens(i int64) []int {
	s, j := d.Locate(i)
	return d.shards[s].Tokens(j)
}
