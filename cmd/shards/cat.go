package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// runCat implements `shards cat`: one document as a JSON array of ids, or its text.
func runCat(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "cat", "DIR|PREFIX --doc K [--decode [--tokenizer SPEC]]",
		"Prints document K of the dataset in DIR (a directory or s3://bucket/prefix; documents are\n"+
			"numbered from 0 across the shards in manifest order) as one JSON array of token ids, or\n"+
			"with --decode its text as one JSON string. The tokenizer for --decode is --tokenizer or,\n"+
			"without it, the dataset's own, found offline: the tokenizer file stored beside the data\n"+
			"(chars.json, tokenizer.json, ...; for a part DIR/parts/part-*, beside the run's in DIR)\n"+
			"or the built-in tokenizer the manifest names, whichever has the manifest's fingerprint.\n"+
			"Only the shard holding K is opened (from S3: fetched into --cache-dir). DIR may also be a\n"+
			"bare GPT-NeoX shard PREFIX.")
	doc := c.Flags.Int64("doc", -1, "the document `K` to print, 0-based (required)")
	decode := c.Flags.Bool("decode", false, "print the document's text as a JSON string instead of its ids")
	var tf tokenizerFlags
	tf.Register(c.Flags, "--decode: the tokenizer (empty: the dataset's own, as its manifest records it)")
	var allow allowMergedFlag
	allow.register(c.Flags)
	sf := storageFlags{log: newLogger(stderr)}
	sf.register(c.Flags, true)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.UsageError(stderr, "want exactly one DIR or PREFIX")
	case *doc < 0 && !c.IsSet("doc"):
		return c.UsageError(stderr, "--doc K is required (a document index: 0, 1, ...)")
	case *doc < 0:
		return c.UsageError(stderr, fmt.Sprintf("--doc %d: a document index is 0, 1, ... (the first is 0)", *doc))
	case tf.Spec != "" && !*decode:
		return c.UsageError(stderr, "--tokenizer applies only with --decode")
	}
	t, err := sf.openTarget(ctx, pos[0])
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	ids, info, err := readDocument(ctx, t, *doc, sf.cacheDir, allow.options())
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if !*decode {
		if ids == nil {
			ids = []int{}
		}
		if err := writeJSON(stdout, ids); err != nil {
			return fail(ctx, stderr, c.Name, err)
		}
		return cli.ExitOK
	}
	tok, err := catTokenizer(ctx, &tf, t, info, sf.open, stderr)
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	differs := info != nil && tok.Fingerprint() != info.Fingerprint // only with --tokenizer
	for i, id := range ids {
		if tok.TokenBytes(id) == nil {
			hint := "is --tokenizer the one that made " + t.String() + "?"
			if differs {
				hint = fmt.Sprintf("--tokenizer is not the dataset's tokenizer %s (fingerprint %s, --tokenizer's %s)",
					info.Name, shortFingerprint(info.Fingerprint), shortFingerprint(tok.Fingerprint()))
			}
			return fail(ctx, stderr, c.Name, fmt.Errorf("document %d, token %d: id %d is not a token of %s (vocab %d)\n---> HINT: %s",
				*doc, i, id, tok.Name(), tok.VocabSize(), hint))
		}
	}
	if err := writeJSON(stdout, tok.Decode(ids)); err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if differs {
		newLogger(stderr).Warn("--tokenizer differs from the dataset's tokenizer; the text may be wrong",
			slog.String("tokenizer", tok.Name()), slog.String("fingerprint", shortFingerprint(tok.Fingerprint())),
			slog.String("dataset_tokenizer", info.Name), slog.String("dataset_fingerprint", shortFingerprint(info.Fingerprint)))
	}
	return cli.ExitOK
}

// readDocument returns document k's ids and, for a dataset, its tokenizer. Only the
// shard holding k is opened.
func readDocument(ctx context.Context, t target, k int64, cacheDir string, opts []shards.Option) ([]int, *shards.TokenizerInfo, error) {
	if t.bare() {
		r, err := shards.OpenStore(ctx, t.store, t.prefix, cacheDir, "", "", opts...)
		if err != nil {
			return nil, nil, err
		}
		defer r.Close()
		if k >= int64(r.Len()) {
			return nil, nil, outOfRange(k, t, int64(r.Len()))
		}
		ids := r.Tokens(int(k))
		if err := checkIDs(r, int(k), ids, shards.TokenizerInfo{}, t); err != nil {
			return nil, nil, err
		}
		return ids, nil, nil
	}
	m, err := shards.ReadManifest(ctx, t.store, "")
	if err != nil {
		return nil, nil, err
	}
	if k >= m.Documents {
		return nil, nil, outOfRange(k, t, m.Documents)
	}
	local := k
	for _, s := range m.Shards {
		if local >= s.Documents {
			local -= s.Documents
			continue
		}
		r, err := shards.OpenStore(ctx, t.store, shards.ShardKey("", s), cacheDir, s.BinSHA256, s.IdxSHA256, opts...)
		if err != nil {
			return nil, nil, err
		}
		defer r.Close()
		if r.DType() != m.DType {
			return nil, nil, fmt.Errorf("%s.idx holds %s tokens, the manifest says %s\n---> HINT: the shard and the manifest do not belong together: run `shards verify %s`",
				r.Name(), r.DType(), m.DType, t)
		}
		if int64(r.Len()) != s.Documents {
			return nil, nil, fmt.Errorf("%s.idx has %d documents, the manifest says %d\n---> HINT: the shard and the manifest do not belong together: run `shards verify %s`",
				r.Name(), r.Len(), s.Documents, t)
		}
		ids := r.Tokens(int(local))
		if err := checkIDs(r, int(local), ids, m.Tokenizer, t); err != nil {
			return nil, nil, err
		}
		return ids, &m.Tokenizer, nil
	}
	return nil, nil, outOfRange(k, t, m.Documents) // unreachable: Validate checked the totals
}

// checkIDs refuses document i of shard r (ids, its tokens) if an id lies outside the
// manifest's vocabulary [0, tok.VocabSize), or, for a bare shard (tok.VocabSize 0: no
// vocabulary known), is negative: a damaged .bin (a flipped byte) or ids of another
// tokenizer, which printed as they were without a word.
func checkIDs(r *shards.Reader, i int, ids []int, tok shards.TokenizerInfo, t target) error {
	for j, id := range ids {
		if id >= 0 && (id < tok.VocabSize || tok.VocabSize == 0) {
			continue
		}
		off := r.Index().Pointer(i) + int64(j)*int64(r.DType().Size())
		if tok.VocabSize == 0 {
			return fmt.Errorf("%s.bin: byte %d (document %d, token %d): negative token id %d\n---> HINT: the .bin is damaged: restore it, or re-run the stage that wrote it",
				r.Name(), off, i, j, id)
		}
		return fmt.Errorf("%s.bin: byte %d (document %d of the shard, token %d): id %d is outside the vocabulary [0,%d) of the manifest's tokenizer %s\n---> HINT: the shard is damaged, or its ids are not that tokenizer's: run `shards verify %s`",
			r.Name(), off, i, j, id, tok.VocabSize, tok.Name, t)
	}
	return nil
}

func outOfRange(k int64, t target, n int64) error {
	if n == 0 {
		return fmt.Errorf("document %d is out of range: %s has no documents", k, t)
	}
	return fmt.Errorf("document %d is out of range: %s has %d documents (0..%d)", k, t, n, n-1)
}

// catTokenizer resolves the tokenizer for --decode: --tokenizer (used even when its
// fingerprint differs from the manifest's; the caller warns), or the dataset's own, as
// its manifest records it (spec.ForDataset): the tokenizer file stored beside the data
// (chars.json, tokenizer.json; a part's, the run's; from S3, fetched into a temporary
// directory: cli.TokenizerBeside, which warns of one it cannot read), else the embedded
// tokenizer of that name. Neither needs the network.
func catTokenizer(ctx context.Context, tf *tokenizerFlags, t target, info *shards.TokenizerInfo, open func(context.Context, string) (storage.Store, error), stderr io.Writer) (*tokenize.Tokenizer, error) {
	if tf.Spec != "" {
		return tf.load(ctx, tf.Spec, stderr)
	}
	if info == nil {
		return nil, fmt.Errorf("a bare shard does not say which tokenizer made it\n---> HINT: pass --tokenizer SPEC")
	}
	dir, from, cleanup, err := cli.TokenizerBeside(ctx, t.store, open, newLogger(stderr))
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tok, err := spec.ForDataset(ctx, dir, info.Name, info.Fingerprint, tf.options(stderr))
	if err != nil {
		return nil, fmt.Errorf("%w\n---> HINT: pass --tokenizer SPEC: the tokenizer the dataset was made with", cli.NamedBeside(err, dir, from))
	}
	return tok, nil
}
