package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
)

// convertFlags are `shards convert`'s flags; some apply to one direction only.
type convertFlags struct {
	to, from    string
	out         string
	name, split string
	firstIndex  int
	shardTokens int
	splitAtEOD  bool
	tf          tokenizerFlags
	allow       allowMergedFlag
	sf          storageFlags
}

// Flags that apply to one direction (or format) only.
var (
	exportOnlyFlags = []string{"allow-merged-doc-idx", "cache-dir", "split"}
	llmcExportFlags = []string{"name", "first-index", "shard-tokens"}
	importOnlyFlags = []string{"tokenizer", "tokenizer-url", "tokenizer-sha256", "tokenizer-cache-dir", "split-at-eod"}
)

func (cf *convertFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.to, "to", "", "export the dataset DIR to `FORMAT`: nanogpt or llmc")
	fs.StringVar(&cf.from, "from", "", "import FILES of `FORMAT` nanogpt or llmc into a new dataset")
	fs.StringVar(&cf.out, "out", "", "where to write (required): with --to a directory `PATH` (--to nanogpt: or a FILE.bin, for one split), with --from the new dataset's directory; local or s3://bucket/prefix")
	fs.StringVar(&cf.name, "name", "", "--to llmc: file `NAME` start, files are NAME_SPLIT_NNNNNN.bin (empty: DIR's base name)")
	fs.StringVar(&cf.split, "split", "", "--to: export only the dataset's `SPLIT` (train, val, test; empty: every split, each to its own files)")
	fs.IntVar(&cf.firstIndex, "first-index", -1, "--to llmc: `NNNNNN` of the first file (-1: llm.c's numbering, 0 for val and 1 for train)")
	fs.IntVar(&cf.shardTokens, "shard-tokens", shards.LLMCShardTokens, "--to llmc: tokens per file, `N` (documents may straddle files, as in llm.c)")
	fs.BoolVar(&cf.splitAtEOD, "split-at-eod", false, "--from: recover documents at the tokenizer's end-of-document id (nanoGPT files end documents with it, llm.c files start them with it); without it each file is one document")
	cf.tf.Register(fs, "--from: the tokenizer that made the ids, recorded in the manifest (required)")
	cf.allow.register(fs)
	cf.sf.register(fs, true)
}

// runConvert implements `shards convert`: export to nanoGPT or llm.c files, or import them.
func runConvert(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "convert", "--to nanogpt|llmc DIR --out PATH [flags]\n   or: shards convert --from nanogpt|llmc FILE... --out DIR --tokenizer SPEC [--split-at-eod]",
		"Exports the dataset in DIR (a directory or s3://bucket/prefix) to another trainer's token\n"+
			"files, or imports such files into a new dataset.\n\n"+
			"Each split of the dataset goes to its own files (--split picks one). --to nanogpt writes\n"+
			"PATH/train.bin, PATH/val.bin (and test.bin): every token of the split, documents in order,\n"+
			"as nanoGPT's headerless uint16 (int32 datasets only if every id fits); a PATH ending in .bin\n"+
			"is that one file, for --split (default train). A character vocabulary (chars.json) also\n"+
			"gets nanoGPT's meta.pkl beside the files (vocab_size, itos, stoi); GPT-2's needs none; any\n"+
			"other is warned about (nanoGPT assumes GPT-2 without a meta.pkl). --to llmc writes llm.c shards\n"+
			"NAME_SPLIT_NNNNNN.bin under the directory PATH, --shard-tokens each (GPT-2 header and\n"+
			"uint16 tokens; llama-3 header and uint32 tokens for int32 datasets), val numbered from 0 and\n"+
			"train from 1 as llm.c's fineweb.py does, with the end-of-text id before each document as\n"+
			"llm.c puts it (the dataset keeps it after; --from llmc --split-at-eod moves it back).\n"+
			"Existing files of the same names are replaced. Prints \"FILE: N tokens\" per file written.\n\n"+
			"--from nanogpt|llmc reads local FILES (one shard each, named after the file) into a new\n"+
			"dataset in DIR, whose manifest records --tokenizer; the files' ids are checked against\n"+
			"its vocabulary. Prints \"DIR/manifest.json: D documents, T tokens, S shards\".")
	var cf convertFlags
	cf.sf.log = newLogger(stderr)
	cf.register(c.Flags)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	set := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if msg := cf.check(pos, set); msg != "" {
		return c.UsageError(stderr, msg)
	}
	var err error
	switch {
	case cf.to == string(shards.NanoGPT):
		err = exportNanoGPT(ctx, &cf, pos[0], stdout)
	case cf.to == string(shards.LLMC):
		err = exportLLMC(ctx, &cf, pos[0], stdout)
	default:
		err = importFiles(ctx, &cf, pos, args, stdout, stderr)
	}
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	return cli.ExitOK
}

// check returns a usage error message, or "" when the command line makes sense.
func (cf *convertFlags) check(pos []string, set map[string]bool) string {
	isFormat := func(f string) bool { return f == string(shards.NanoGPT) || f == string(shards.LLMC) }
	misplaced := func(names []string, why string) string {
		for _, n := range names {
			if set[n] {
				return fmt.Sprintf("--%s applies only %s", n, why)
			}
		}
		return ""
	}
	switch {
	case (cf.to == "") == (cf.from == ""):
		return "give exactly one of --to FORMAT (export) and --from FORMAT (import)"
	case cf.to != "" && !isFormat(cf.to):
		return fmt.Sprintf("--to %q: want nanogpt or llmc", cf.to)
	case cf.from != "" && !isFormat(cf.from):
		return fmt.Sprintf("--from %q: want nanogpt or llmc", cf.from)
	case cf.out == "":
		return "--out is required"
	}
	if cf.to != "" {
		if len(pos) != 1 {
			return "--to wants exactly one dataset DIR"
		}
		if m := misplaced(importOnlyFlags, "with --from"); m != "" {
			return m
		}
		if m := misplaced(llmcExportFlags, "with --to llmc"); m != "" && cf.to != string(shards.LLMC) {
			return m
		}
		switch {
		case cf.split != "" && shards.CheckSplitName(cf.split) != nil:
			return "--split: " + shards.CheckSplitName(cf.split).Error()
		case cf.name != "" && strings.ContainsAny(cf.name, "/\\"):
			return "--name may not contain a slash"
		case cf.shardTokens <= 0:
			return "--shard-tokens must be at least 1"
		case cf.firstIndex < -1:
			return "--first-index must be 0 or more (or -1)"
		}
		return ""
	}
	if len(pos) == 0 {
		return "--from wants one or more FILES"
	}
	for _, names := range [][]string{exportOnlyFlags, llmcExportFlags} {
		if m := misplaced(names, "with --to (export)"); m != "" {
			return m
		}
	}
	if cf.tf.Spec == "" {
		return "--tokenizer is required with --from"
	}
	for _, f := range pos {
		if strings.Contains(f, "://") {
			return fmt.Sprintf("%s: --from reads local files only", f)
		}
	}
	return ""
}

// openDataset opens the dataset to export; location names it (an absolute path or s3://).
func (cf *convertFlags) openDataset(ctx context.Context, dir string) (d *shards.Dataset, location string, err error) {
	st, err := cf.sf.openDatasetStore(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	// Verified as train and merge read it (sha256 against the manifest, ids against
	// the vocabulary; remembered until the files change): an export of damaged shards
	// once succeeded silently.
	opts := append(cf.allow.options(), shards.VerifyOnOpen(0, cf.sf.cacheDir))
	d, err = shards.OpenDataset(ctx, st, "", cf.sf.cacheDir, opts...)
	return d, st.String(), err
}

// exportNanoGPT writes each split of dir (or --split's) to nanoGPT's SPLIT.bin under
// cf.out, or the one split to the file cf.out when it ends in .bin; atomically.
func exportNanoGPT(ctx context.Context, cf *convertFlags, dir string, stdout io.Writer) error {
	d, location, err := cf.openDataset(ctx, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	splits, err := cf.exportSplits(d, location)
	if err != nil {
		return err
	}
	oneFile := strings.HasSuffix(cf.out, ".bin")
	if oneFile && len(splits) > 1 {
		splits = []string{shards.TrainSplit}
	}
	src, err := cf.sf.openDatasetStore(ctx, dir)
	if err != nil {
		return err
	}
	meta, err := nanoGPTMeta(ctx, src, d.Manifest.Tokenizer, cf.sf.open, cf.sf.log)
	if err != nil {
		return err
	}
	// A split that fails takes the files of the splits before it with it (as --to llmc
	// does): no train.bin without the val.bin asked for beside it.
	type done struct {
		st  storage.Store
		key string
	}
	var written []done
	var lines []string
	for _, split := range splits {
		st, key, cleanup, err := cf.outFile(ctx, split, oneFile)
		if err != nil {
			return err
		}
		n, err := writeNanoGPT(ctx, d, split, st, key)
		if err != nil {
			for _, w := range written {
				w.st.Delete(context.WithoutCancel(ctx), w.key)
			}
			cleanup()
			return err
		}
		written = append(written, done{st, key})
		lines = append(lines, fmt.Sprintf("%s: %d tokens\n", storeKeyName(st, key), n))
	}
	// meta.pkl beside the .bin files: nanoGPT's data_dir holds both.
	if meta != nil {
		w := written[0]
		if err := cli.PutFile(ctx, w.st, nanoGPTMetaName, meta); err != nil {
			for _, w := range written {
				w.st.Delete(context.WithoutCancel(ctx), w.key)
			}
			return err
		}
		lines = append(lines, fmt.Sprintf("%s: vocab_size %d (character vocabulary)\n", storeKeyName(w.st, nanoGPTMetaName), d.Manifest.Tokenizer.VocabSize))
	} else {
		// An earlier export's meta.pkl (a character vocabulary's) would be read for
		// these ids: nanoGPT takes its vocab_size and sample.py its characters.
		w := written[0]
		if _, err := w.st.Stat(ctx, nanoGPTMetaName); err == nil {
			if err := w.st.Delete(ctx, nanoGPTMetaName); err != nil {
				return fmt.Errorf("remove the earlier export's %s (nanoGPT would read its vocabulary for these ids): %w", storeKeyName(w.st, nanoGPTMetaName), err)
			}
			cf.sf.log.Warn("removed an earlier export's meta.pkl: nanoGPT would have read its vocabulary for these ids", "file", storeKeyName(w.st, nanoGPTMetaName))
		} else if !errors.Is(err, storage.ErrNotExist) {
			return fmt.Errorf("%s: %w", storeKeyName(w.st, nanoGPTMetaName), err)
		}
	}
	for _, l := range lines {
		io.WriteString(stdout, l)
	}
	return nil
}

// exportSplits are the splits of d to export: --split, which d must have, or all of d's.
func (cf *convertFlags) exportSplits(d *shards.Dataset, location string) ([]string, error) {
	have := d.Splits()
	if cf.split == "" {
		return have, nil
	}
	if !slices.Contains(have, cf.split) {
		return nil, fmt.Errorf("%s has no %s split (its splits: %s)", location, cf.split, strings.Join(have, ", "))
	}
	return []string{cf.split}, nil
}

// writeNanoGPT writes d's split to key of st, committed only when complete.
func writeNanoGPT(ctx context.Context, d *shards.Dataset, split string, st storage.Store, key string) (int64, error) {
	w, err := st.Create(ctx, key)
	if err != nil {
		return 0, err
	}
	defer w.Abort()
	n, err := shards.ExportNanoGPT(ctx, d, split, w)
	if err != nil {
		return 0, err
	}
	return n, w.Commit()
}

// outFile is where split's nanoGPT file goes: --out itself (oneFile), else SPLIT.bin
// under it, as the store of its directory and its key there; cleanup removes the
// directory if it was made for the file and stayed empty.
func (cf *convertFlags) outFile(ctx context.Context, split string, oneFile bool) (st storage.Store, key string, cleanup func(), err error) {
	out := strings.TrimSuffix(cf.out, "/")
	if !oneFile {
		out += "/" + split + ".bin"
	}
	var dir, base string
	if strings.Contains(out, "://") {
		dir, base = path.Split(out)
		dir = strings.TrimSuffix(dir, "/")
		if strings.HasPrefix(out, "s3://") && strings.Count(dir, "/") < 2 {
			return nil, "", nil, fmt.Errorf("--out %s: want s3://bucket/FILE", cf.out)
		}
	} else {
		dir, base = filepath.Dir(out), filepath.Base(out)
	}
	cleanup = removeIfCreated(dir)
	st, err = cf.sf.open(ctx, dir)
	return st, base, cleanup, err
}

// exportLLMC writes dir's tokens as llm.c shards under cf.out.
func exportLLMC(ctx context.Context, cf *convertFlags, dir string, stdout io.Writer) error {
	d, location, err := cf.openDataset(ctx, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	cleanup := removeIfCreated(cf.out)
	st, err := cf.sf.open(ctx, cf.out)
	if err != nil {
		return err
	}
	splits, err := cf.exportSplits(d, location)
	if err != nil {
		return err
	}
	slices.SortStableFunc(splits, func(a, b string) int { return cmp.Compare(llmcFirstIndex(a), llmcFirstIndex(b)) })
	var written []string
	name := cf.name
	if name == "" {
		name = baseName(location)
	}
	for _, split := range splits {
		o := shards.LLMCOptions{Name: name, Split: split, FirstIndex: cf.firstIndex, ShardTokens: cf.shardTokens}
		if o.FirstIndex < 0 {
			o.FirstIndex = llmcFirstIndex(split)
		}
		keys, err := shards.ExportLLMC(ctx, d, st, "", o)
		if err != nil {
			for _, k := range written {
				st.Delete(context.WithoutCancel(ctx), k)
			}
			// An earlier export's files of these splits were partly replaced and
			// those are gone now: the rest of them would read as a whole set to
			// llm.c (which reads every NAME_SPLIT_*.bin). Remove them too.
			if n, rerr := removeLLMCSet(context.WithoutCancel(ctx), st, name, splits); rerr == nil && n > 0 {
				err = fmt.Errorf("%w (the %d files of an earlier export of these splits in %s were removed too, as it had been partly overwritten: run the command again)", err, n, st.String())
			}
			cleanup()
			return err
		}
		written = append(written, keys...)
		left := d.SplitTokens(split)
		for _, k := range keys {
			n := min(left, int64(o.ShardTokens))
			left -= n
			fmt.Fprintf(stdout, "%s: %d tokens\n", storeKeyName(st, k), n)
		}
	}
	return removeStaleLLMC(ctx, st, name, splits, written)
}

// removeLLMCSet removes every file NAME_SPLIT_NNNNNN.bin of splits in st, returning
// how many there were.
func removeLLMCSet(ctx context.Context, st storage.Store, name string, splits []string) (int, error) {
	before, err := st.List(ctx, "")
	if err != nil {
		return 0, err
	}
	if err := removeStaleLLMC(ctx, st, name, splits, nil); err != nil {
		return 0, err
	}
	after, err := st.List(ctx, "")
	return len(before) - len(after), err
}

// removeStaleLLMC removes the files NAME_SPLIT_NNNNNN.bin of the splits just exported
// that this export did not write: an earlier export of more files left them, and llm.c,
// which reads every NAME_SPLIT_*.bin, would read their tokens too.
func removeStaleLLMC(ctx context.Context, st storage.Store, name string, splits, written []string) error {
	infos, err := st.List(ctx, "")
	if err != nil {
		return err
	}
	for _, in := range infos {
		key := in.Key
		if slices.Contains(written, key) || strings.Contains(key, "/") || !strings.HasSuffix(key, ".bin") {
			continue
		}
		for _, split := range splits {
			num, ok := strings.CutPrefix(strings.TrimSuffix(key, ".bin"), name+"_"+split+"_")
			if ok && len(num) == 6 && strings.Trim(num, "0123456789") == "" {
				if err := st.Delete(ctx, key); err != nil {
					return fmt.Errorf("remove %s, left by an earlier export: %w", storeKeyName(st, key), err)
				}
			}
		}
	}
	return nil
}

// llmcFirstIndex is the number of split's first llm.c file: fineweb.py makes shard 0 the
// val split and numbers train from 1.
func llmcFirstIndex(split string) int {
	if split == "train" {
		return 1
	}
	return 0
}

// importFiles makes a new dataset in cf.out from nanoGPT or llm.c files.
func importFiles(ctx context.Context, cf *convertFlags, files, args []string, stdout, stderr io.Writer) error {
	tok, err := cf.tf.load(ctx, cf.tf.Spec, stderr)
	if err != nil {
		return err
	}
	if cf.splitAtEOD && tok.EOD() < 0 {
		// It said "import: splitting at EOD needs the tokenizer's eod_id".
		return fmt.Errorf("--split-at-eod: tokenizer %s has no end-of-document id to split at: drop --split-at-eod (each file is then one document), or give the tokenizer that made the files", tok.Name())
	}
	for _, f := range files {
		// An empty file (a failed download, a wrong path's placeholder) imported as
		// a shard of no tokens made a dataset of nothing, reported as success.
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			return fmt.Errorf("%s is empty: no tokens to import (a failed copy or download?)", f)
		} else if err == nil && fi.IsDir() {
			// It failed with "import: read DIR: is a directory".
			return fmt.Errorf("%s is a directory: name the files in it (%s)", f, filepath.Join(f, "*.bin"))
		}
	}
	cleanup := removeIfCreated(cf.out)
	st, err := cf.sf.open(ctx, cf.out)
	if err != nil {
		return err
	}
	// OUT holding a dataset is refused (by Import too) before the tokenizer files
	// below: they replaced that dataset's, and were removed on the refusal, leaving
	// it without its own (cat --decode, train sample failed on it).
	if _, err := st.Stat(ctx, shards.ManifestKey("")); err == nil {
		cleanup()
		return fmt.Errorf("import into %s: %w: it already has a %s (choose another --out, or remove it first)", st.String(), shards.ErrExists, shards.ManifestName)
	} else if !errors.Is(err, storage.ErrNotExist) {
		cleanup()
		return fmt.Errorf("import into %s: %w", st.String(), err)
	}
	// A tokenizer of local files (a chars.json, tokenize train's tokenizer.json) has
	// no name a reader could load it by: its files are stored beside the data, as prep
	// stores them, for cat --decode, train sample and export (they failed to find it).
	keys, wrote, err := cli.StoreTokenizerBeside(ctx, st, cf.tf.Spec, tok, nil, cf.sf.log) // (no manifest there: refused above)
	if err != nil {
		for _, key := range wrote {
			st.Delete(context.WithoutCancel(ctx), key)
		}
		cleanup()
		return err
	}
	m, err := shards.Import(ctx, st, "", files, shards.ImportOptions{
		Format:     shards.Format(cf.from),
		Tokenizer:  tokenizerInfo(tok),
		SplitAtEOD: cf.splitAtEOD,
		Source:     cli.WithTokenizerFiles(map[string]any{"command": commandLine("convert", args), "tokenizer_spec": cf.tf.Spec}, keys),
	})
	if err != nil {
		for _, key := range wrote {
			st.Delete(context.WithoutCancel(ctx), key)
		}
		cleanup()
		return err
	}
	printDatasetSummary(stdout, st.String(), m)
	return nil
}

// storeKeyName names key of st for output: the file's path or s3:// URL.
func storeKeyName(st storage.Store, key string) string {
	return strings.TrimSuffix(st.String(), "/") + "/" + key
}

// baseName is the last element of a directory path or s3:// location ("data" if none).
func baseName(location string) string {
	b := path.Base(strings.TrimSuffix(filepath.ToSlash(location), "/"))
	if b == "." || b == "/" || b == "" || strings.HasSuffix(b, ":") {
		return "data"
	}
	return b
}
