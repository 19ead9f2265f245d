package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/internal/cli"
	"gptkit/internal/fetch"
	"gptkit/internal/redact"
	"gptkit/pipelines"
	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// runCorpus implements `prep NAME`: a corpus from the catalog.
func runCorpus(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	corpus, ok := prep.LookupCorpus(name)
	if !ok {
		fmt.Fprintf(stderr, "prep: %v %q (known: %s; `prep list` describes them, `prep custom` takes your own files)\n", errNoCorpus, name, strings.Join(prep.CorpusNames(), ", "))
		return cli.ExitUsage
	}
	c := cli.NewCommand("prep", corpus.Name, "-d DIR [flags]", corpus.Description+"\n\n"+
		"Downloads the corpus into DIR/"+corpus.Name+"/downloads/ (parallel, resumable; checked against the sizes and\n"+
		"sha256 the catalog, --checksums or the mirror's SHA256SUMS know, with a warning for files none does),\n"+
		"then tokenizes it on every core into DIR/"+corpus.Name+"/: "+corpus.Name+"_text_document*.{bin,idx} (val and test\n"+
		"splits as "+corpus.Name+"_val_text_document*, "+corpus.Name+"_test_text_document*) and manifest.json, written\n"+
		"last. Rerun the same command after a crash: finished shards are kept.\n\n"+
		"On a cluster, --slurm writes and submits an array job of --array-size tasks, each tokenizing\n"+
		"one part (an equal share of the bytes) into DIR/"+corpus.Name+"/parts/, and a merge job after it\n"+
		"(--merge-parts) that writes the manifest. DIR must be shared by the nodes; --dest may be S3.")
	var f jobFlags
	f.register(c)
	mirror := c.Flags.String("mirror", "", "fetch the corpus' files from `BASE`/<name> (e.g. BASE/train/00.jsonl.zst) before the catalog's URLs; BASE/SHA256SUMS, if there, verifies them")
	checksums := c.Flags.String("checksums", "", "sha256sum-format `FILE` with the files' sha256 (relative names as in the catalog)")
	download := false
	if corpus.Embedded() {
		c.Flags.BoolVar(&download, "download", false, "download the text from the catalog's sources instead of using the copy built into this binary (--mirror implies it); both are checked against the same sha256")
	}
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	if msg := f.check(); msg != "" {
		return c.UsageError(stderr, msg)
	}
	log := newLogger(stderr)
	who := "prep " + corpus.Name
	opt := prep.PlanOptions{Mirror: *mirror}
	if *checksums != "" {
		data, err := os.ReadFile(*checksums)
		if err != nil {
			return cli.Fail(stderr, who, err)
		}
		if opt.Checksums, err = fetch.ParseSHA256SUMS(data); err != nil {
			return cli.Fail(stderr, who, fmt.Errorf("--checksums %s: %w", *checksums, err))
		}
		if len(opt.Checksums) > 0 && corpus.ChecksumsMatched(opt.Checksums) == 0 {
			// Names that match no file would check nothing, silently.
			listed := slices.Sorted(maps.Keys(opt.Checksums))
			var want []string
			for _, cf := range corpus.Files {
				want = append(want, cf.Name)
			}
			return cli.Fail(stderr, who, fmt.Errorf("--checksums %s names none of the corpus's files (it lists %s; the corpus's are %s)\n---> HINT: write each line as \"SHA256  NAME\" with NAME as the corpus names it",
				*checksums, strings.Join(listed[:min(len(listed), 3)], ", "), strings.Join(want[:min(len(want), 3)], ", ")))
		}
	}
	j := &job{name: corpus.Name, flags: &f, command: "prep " + corpus.Name + " " + strings.Join(args, " "), log: log, stdout: stdout, stderr: stderr, appendEOD: true,
		sub: corpus.Name, flagSet: c.Flags}
	j.fetches = corpus.Plan(j.workDir(), opt)
	for _, f := range j.fetches {
		rel, err := filepath.Rel(j.workDir(), f.Dest)
		if err != nil {
			rel = f.Dest
		}
		j.inputs = append(j.inputs, fmt.Sprintf("%s (%d bytes)", filepath.ToSlash(rel), f.Size))
	}
	if corpus.Embedded() && !download && *mirror == "" {
		j.beforeFetch = func(context.Context) error { return writeEmbedded(corpus, j.fetches, stderr) }
	}
	if *mirror != "" {
		// The mirror's SHA256SUMS is asked for only when something is to be downloaded.
		j.beforeFetch = func(ctx context.Context) error {
			// Said first: a mirror that accepts connections and never answers holds
			// this request for minutes (three tries of a minute each).
			log.Info("asking the mirror for SHA256SUMS", "url", redact.URL(strings.TrimRight(*mirror, "/")+"/SHA256SUMS"))
			sums, err := prep.FetchMirrorSums(ctx, nil, *mirror)
			if err != nil && len(opt.Checksums) > 0 && ctx.Err() == nil {
				// The error's own hint is to pass --checksums: with it, the mirror's
				// list only adds to it (it failed the run anyway, so the hint misled).
				log.Warn("could not read the mirror's SHA256SUMS: the files --checksums lists are verified, the others only by their format", "err", redact.String(cli.OneLine(err.Error())))
				err = nil
			}
			if err != nil {
				return err
			}
			opt.MirrorSums = sums
			j.fetches = corpus.Plan(j.workDir(), opt)
			return nil
		}
	}
	j.tokenizer = func(ctx context.Context, _ storage.Store) (*tokenize.Tokenizer, string, error) {
		return f.loadTokenizer(ctx, corpus.DefaultTokenizer, log)
	}
	j.splits = func(context.Context) ([]pipelines.SplitInputs, error) { return corpusSplits(corpus, j.fetches), nil }
	if corpus.Name == "shakespeare" {
		shakespeare(j, &f, log)
	}
	return j.run(ctx)
}

// corpusSplits groups the fetched files by split, in catalog order (train first).
func corpusSplits(c prep.Corpus, files []fetch.File) []pipelines.SplitInputs {
	var out []pipelines.SplitInputs
	for _, split := range c.Splits() {
		s := pipelines.SplitInputs{Split: split}
		if split == "train" {
			s.Split = ""
		}
		for i, cf := range c.Files {
			if cf.Split == split {
				s.Inputs = append(s.Inputs, files[i].Dest)
			}
		}
		if len(s.Inputs) > 0 { // not a split prep derives (shakespeare's val)
			out = append(out, s)
		}
	}
	return out
}

// shakespeare makes the tiny Shakespeare job nanoGPT's: the text cut 90/10 by characters
// into a train and a val document, no end-of-document ids, and by default nanoGPT's
// character vocabulary (the sorted set of the characters of the whole text, 65 of them),
// stored beside the data as chars.json.
func shakespeare(j *job, f *jobFlags, log *slog.Logger) {
	input := j.fetches[0].Dest
	j.appendEOD = false
	const charSpec = "char (nanoGPT shakespeare_char: chars.json beside the data)"
	j.tokenizer = func(ctx context.Context, st storage.Store) (*tokenize.Tokenizer, string, error) {
		if f.tok.Spec != "" && f.tok.Spec != "char" {
			return f.loadTokenizer(ctx, "", log)
		}
		// A finished dataset has its vocabulary beside it: no need to fetch the text
		// again (its download is gone) to find the dataset complete.
		if _, err := shards.ReadManifest(ctx, st, ""); err == nil && !f.overwrite {
			if tok, err := readChars(ctx, st); err == nil {
				return tok, charSpec, nil
			}
		}
		// The vocabulary comes from the text: fetch it first.
		if err := j.fetch(ctx); err != nil {
			return nil, "", err
		}
		text, err := os.ReadFile(input)
		if err != nil {
			return nil, "", err
		}
		return tokenize.NewCharsFromText(string(text), "shakespeare-char"), charSpec, nil
	}
	j.splits = func(context.Context) ([]pipelines.SplitInputs, error) {
		text, err := os.ReadFile(input)
		if err != nil {
			return nil, err
		}
		runes := []rune(string(text))
		n := len(runes) * 9 / 10 // nanoGPT: data[:int(n*0.9)]
		dir := filepath.Join(j.workDir(), "downloads")
		train, val := filepath.Join(dir, "train.txt"), filepath.Join(dir, "val.txt")
		// Rewritten only when they change: their modification times identify the job,
		// so that a killed run resumes.
		if err := writeIfChanged(train, []byte(string(runes[:n]))); err != nil {
			return nil, err
		}
		if err := writeIfChanged(val, []byte(string(runes[n:]))); err != nil {
			return nil, err
		}
		return []pipelines.SplitInputs{{Inputs: []string{train}}, {Split: "val", Inputs: []string{val}}}, nil
	}
}

// readChars loads the character vocabulary a shakespeare run stored in st.
func readChars(ctx context.Context, st storage.Store) (*tokenize.Tokenizer, error) {
	obj, err := st.Open(ctx, "chars.json")
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, err
	}
	return tokenize.LoadChars(data, "shakespeare-char")
}

// writeIfChanged writes data to path unless path already holds it.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return os.WriteFile(path, data, 0o666)
}
