package shards

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"gptkit/storage"
)

// Input names a dataset to read: a directory of a store.
type Input struct {
	Store storage.Store
	Dir   string
}

// String names the dataset for messages.
func (in Input) String() string { return keyName(in.Store, cleanDir(in.Dir)) }

// textDocument ends every shard name of a dataset directory (docs/formats.md).
const textDocument = "_text_document"

// MergeOptions adjust Merge.
type MergeOptions struct {
	// Prefix names the merged shards in the output directory, as `--name NAME` and
	// Megatron's --output-prefix do: NAME_text_document for the train shard,
	// NAME_val_text_document for the val split, and so on. A Prefix already ending in
	// "_text_document" is the train shard's whole name. Default: the base of out
	// ("merged" at a store's root).
	Prefix string
	// Source is extra provenance for the output manifest (the inputs are always listed).
	Source map[string]any
	// Options apply when reading the inputs (AllowMergedDocIdx).
	Options []Option
}

// Merge concatenates datasets, in the order given, into one new shard in outDir of st,
// as GPT-NeoX's merge_datasets.py intends, but with a correct doc_idx (merge_file_ leaves
// it [0]). Inputs must have the same tokenizer fingerprint and dtype. Every input byte is
// checked against its manifest's sha256 while it is copied. The manifest is written last
// and only if outDir has none; on any error nothing of the output stays visible.
func Merge(ctx context.Context, st storage.Store, outDir string, inputs []Input, o MergeOptions) (*Manifest, error) {
	if len(inputs) == 0 {
		return nil, errors.New("shards: merge: no input datasets")
	}
	out := keyName(st, cleanDir(outDir))
	ms := make([]*Manifest, len(inputs))
	for i, in := range inputs {
		m, err := ReadManifest(ctx, in.Store, in.Dir)
		if err != nil {
			return nil, fmt.Errorf("shards: merge into %s: %w", out, err)
		}
		ms[i] = m
		if err := compatible(inputs[0], ms[0], in, m); err != nil {
			return nil, err
		}
	}
	lock, err := storage.LockDir(ctx, st, outDir, storage.LockOwner("shards merge into "+out))
	if err != nil {
		return nil, fmt.Errorf("shards: merge into %s: %w", out, err)
	}
	defer lock.Release()
	if _, err := st.Stat(ctx, ManifestKey(outDir)); err == nil {
		return nil, fmt.Errorf("shards: merge into %s: %w: it already has a %s\n---> HINT: choose a new output directory", out, ErrExists, ManifestName)
	} else if !errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("shards: merge into %s: %w", out, err)
	}

	prefix := o.Prefix
	if prefix == "" {
		base := path.Base(cleanDir(outDir))
		if base == "." || base == "/" {
			base = "merged"
		}
		prefix = base
	}
	// "sh2" once named the train shard sh2 and the val shard sh2_val_text_document:
	// every split's shard is NAME[_SPLIT]_text_document, as in any dataset directory.
	if !strings.HasSuffix(prefix, textDocument) {
		prefix += textDocument
	}
	// One shard per split the inputs have (train first, then in the order met), each
	// the inputs' documents of that split in order: a val split merged into the train
	// shard would become training data.
	var splits []string // by mergeSplitName
	labeled := false
	for _, m := range ms {
		for _, sh := range m.Shards {
			labeled = labeled || sh.Split != ""
			if sp := mergeSplitName(sh.Split); !slices.Contains(splits, sp) {
				splits = append(splits, sp)
			}
		}
	}
	if i := slices.Index(splits, ""); i > 0 { // train first
		splits = slices.Insert(slices.Delete(splits, i, i+1), 0, "")
	}
	var infos []ShardInfo
	defer func() {
		if infos != nil { // not written: remove what was
			bg := context.WithoutCancel(ctx)
			for _, info := range infos {
				st.Delete(bg, info.Prefix+".idx")
				st.Delete(bg, info.Prefix+".bin")
			}
		}
	}()
	for _, split := range splits {
		p := prefix
		if split != "" {
			p = strings.TrimSuffix(prefix, textDocument) + "_" + split + textDocument
		}
		info, err := mergeSplit(ctx, st, join(outDir, p), ms, inputs, split, o.Options)
		if err != nil {
			return nil, fmt.Errorf("shards: merge into %s: %w", out, err)
		}
		if info.Split = split; split == "" && labeled {
			info.Split = "train"
		}
		infos = append(infos, info)
	}
	from := make([]any, len(inputs))
	for i, in := range inputs {
		from[i] = map[string]any{"dataset": in.String(), "source": ms[i].Source}
	}
	src := map[string]any{}
	for k, v := range o.Source {
		src[k] = v
	}
	src["merged_from"] = from
	if _, ok := src["created"]; !ok {
		src["created"] = time.Now().UTC().Format(time.RFC3339)
	}
	m := NewManifest(ms[0].Tokenizer, ms[0].DType, src)
	for _, info := range infos {
		if err := m.Add(outDir, info); err != nil {
			return nil, err
		}
	}
	// Without a manifest the shards are invisible; the deferred removal takes them
	// anyway on an error.
	if err := WriteManifest(ctx, st, outDir, m); err != nil {
		return nil, err
	}
	infos = nil
	return m, nil
}

// mergeSplit writes the documents of split of every input, in order, as the shard
// prefix of st.
func mergeSplit(ctx context.Context, st storage.Store, prefix string, ms []*Manifest, inputs []Input, split string, opts []Option) (ShardInfo, error) {
	w, err := NewWriter(ctx, st, prefix, ms[0].DType)
	if err != nil {
		return ShardInfo{}, err
	}
	defer w.Abort()
	for i, in := range inputs {
		for _, s := range ms[i].Shards {
			if mergeSplitName(s.Split) != split {
				continue
			}
			if err := mergeShard(ctx, w, in, s, opts); err != nil {
				return ShardInfo{}, err
			}
		}
	}
	return w.Close()
}

// compatible refuses to mix tokenizers or dtypes, naming both datasets.
func compatible(a Input, ma *Manifest, b Input, mb *Manifest) error {
	ta, tb := ma.Tokenizer, mb.Tokenizer
	if ta.Fingerprint != tb.Fingerprint || ta.VocabSize != tb.VocabSize || ta.EODID != tb.EODID {
		return fmt.Errorf("shards: merge: %w: %s was tokenized with %s (fingerprint %s, vocab %d, eod %d) but %s with %s (fingerprint %s, vocab %d, eod %d)\n---> HINT: re-tokenize one of them with the other's tokenizer",
			ErrIncompatible, a, ta.Name, ta.Fingerprint, ta.VocabSize, ta.EODID, b, tb.Name, tb.Fingerprint, tb.VocabSize, tb.EODID)
	}
	if ma.DType != mb.DType {
		return fmt.Errorf("shards: merge: %w: %s is %s but %s is %s\n---> HINT: both come from one tokenizer, so one was written by other means; re-tokenize it",
			ErrIncompatible, a, ma.DType, b, mb.DType)
	}
	return nil
}

// mergeShard appends one input shard to w, checking both files against the manifest.
func mergeShard(ctx context.Context, w *Writer, in Input, s ShardInfo, opts []Option) error {
	key := ShardKey(in.Dir, s)
	idxName := keyName(in.Store, key+".idx")
	idx, err := readAll(ctx, in.Store, key+".idx")
	if err != nil {
		return err
	}
	if got := sha256Hex(idx); got != s.IdxSHA256 {
		return checksumErr(idxName, got, s.IdxSHA256)
	}
	ix, err := ParseIndex(idxName, idx, opts...)
	if err != nil {
		return err
	}
	if int64(ix.n) != s.Documents || ix.tokens != s.Tokens {
		return checkAgainstManifest(keyName(in.Store, key), ix, s, ix.dtype)
	}
	bin, err := in.Store.Open(ctx, key+".bin")
	if err != nil {
		return fmt.Errorf("shards: open %s: %w", keyName(in.Store, key+".bin"), err)
	}
	defer bin.Close()
	if err := ix.CheckBinSize(keyName(in.Store, key+".bin"), bin.Size()); err != nil {
		return err
	}
	return w.appendShard(ix, bin, keyName(in.Store, key+".bin"), s.BinSHA256)
}

// mergeSplitName is the split a shard is merged into: "" for the train split, labeled
// "train" or not.
func mergeSplitName(split string) string {
	if split == "train" {
		return ""
	}
	return split
}
