package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize/spec"
)

// runMerge implements `shards merge`: datasets concatenated into a new one.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "merge", "OUT IN... [flags]",
		"Concatenates the datasets IN..., in the order given, into a new dataset in OUT with one\n"+
			"shard per split (BASE_text_document, BASE being --prefix, else OUT's last element;\n"+
			"BASE_val_text_document for the val split, ...) and a correct doc_idx (GPT-NeoX\n"+
			"merge_datasets.py leaves it [0]); the tokenizer files kept beside the inputs (chars.json,\n"+
			"tokenizer.json, ...) come along. The inputs must share a\n"+
			"tokenizer fingerprint and a dtype; every input byte is checked against its manifest's\n"+
			"sha256 while it is copied.\n"+
			"OUT and IN are directories or s3://bucket/prefix; OUT must not hold a dataset yet. Its\n"+
			"manifest is written last, so a failed merge leaves no dataset. Prints\n"+
			"\"OUT/manifest.json: D documents, T tokens, N shards\".")
	prefix := c.Flags.String("prefix", "", "the merged shards' files in OUT are `NAME`_text_document, NAME_val_text_document, ... (as --name elsewhere; a NAME ending in _text_document is the train shard's whole name; empty: the base name of OUT)")
	var allow allowMergedFlag
	allow.register(c.Flags)
	sf := storageFlags{log: newLogger(stderr)}
	sf.register(c.Flags, false)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) < 2:
		return c.UsageError(stderr, "want OUT and at least one IN")
	case strings.ContainsAny(*prefix, "/\\"):
		return c.UsageError(stderr, "--prefix may not contain a slash")
	}
	out, ins := pos[0], pos[1:]
	inputs := make([]shards.Input, len(ins))
	first := map[string]int{} // an input's location -> its first argument
	for i, in := range ins {
		st, err := sf.openDatasetStore(ctx, in)
		if err != nil {
			return fail(ctx, stderr, c.Name, err)
		}
		inputs[i] = shards.Input{Store: st}
		// Merged twice, its documents are twice in the result: a slip of the shell
		// (a glob and a name) as often as a wish, and nothing said it.
		if j, ok := first[st.String()]; ok {
			sf.log.Warn("an input is given twice: its documents are merged twice", "input", st.String(), "arguments", fmt.Sprintf("%d and %d", j+1, i+1))
		} else {
			first[st.String()] = i
		}
	}
	cleanup := removeIfCreated(out)
	st, err := sf.open(ctx, out)
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	copied, err := copyTokenizerFiles(ctx, tokenizerSource(ctx, inputs), st)
	if err != nil {
		for _, key := range copied {
			st.Delete(context.WithoutCancel(ctx), key)
		}
		cleanup()
		return fail(ctx, stderr, c.Name, err)
	}
	m, err := shards.Merge(ctx, st, "", inputs, shards.MergeOptions{
		Prefix:  mergePrefix(*prefix, st.String()),
		Source:  map[string]any{"command": commandLine("merge", args)},
		Options: allow.options(),
	})
	if err != nil {
		for _, key := range copied {
			st.Delete(context.WithoutCancel(ctx), key)
		}
		cleanup()
		return fail(ctx, stderr, c.Name, err)
	}
	printDatasetSummary(stdout, st.String(), m)
	return cli.ExitOK
}

// mergePrefix is the merged shards' NAME (shards.Merge adds _text_document): --prefix,
// else the base name of OUT's store (a directory's absolute path, or s3://bucket/prefix).
func mergePrefix(flagValue, out string) string {
	if flagValue != "" {
		return flagValue
	}
	base := path.Base(strings.TrimSuffix(filepath.ToSlash(out), "/"))
	if base == "" || base == "." || base == "/" || base == ":" {
		base = "merged"
	}
	return base
}

// printDatasetSummary prints the line merge and convert --from end with, as `tokenize run` does.
func printDatasetSummary(w io.Writer, location string, m *shards.Manifest) {
	fmt.Fprintf(w, "%s/%s: %d documents, %d tokens, %d shards\n", strings.TrimSuffix(location, "/"), shards.ManifestName, m.Documents, m.Tokens, len(m.Shards))
}

// commandLine is the command as typed, for provenance.
func commandLine(cmd string, args []string) string {
	return "shards " + cmd + " " + strings.Join(args, " ")
}

// tokenizerSource is the store of the first input holding a tokenizer file beside its
// data (spec.DatasetFiles): the inputs share a tokenizer fingerprint, but an input
// made before tokenize run stored them, or with a built-in name, has none, and OUT
// got none when it came first. The first input's store if none has one.
func tokenizerSource(ctx context.Context, inputs []shards.Input) storage.Store {
	for _, in := range inputs {
		for _, key := range spec.DatasetFiles {
			if _, err := in.Store.Stat(ctx, key); err == nil {
				return in.Store
			}
		}
	}
	return inputs[0].Store
}

// copyTokenizerFiles copies from's tokenizer files beside its data (spec.DatasetFiles:
// prep's chars.json, the tokenizer.json tokenize run stores for a tokenizer of local
// files), those it has, to to (before the manifest: the merged dataset is never
// visible without them), and returns the keys it wrote. from is tokenizerSource's: the
// inputs share a tokenizer fingerprint, so one input's files are every one's.
//
// A file OUT already holds is left as it is (and so never removed when the merge
// fails): OUT may be a dataset the merge refuses, or one of the inputs.
func copyTokenizerFiles(ctx context.Context, from, to storage.Store) ([]string, error) {
	var copied []string
	for _, key := range spec.DatasetFiles {
		if r, err := to.Open(ctx, key); err == nil {
			r.Close()
			continue
		} else if !errors.Is(err, storage.ErrNotExist) {
			return copied, err
		}
		r, err := from.Open(ctx, key)
		if errors.Is(err, storage.ErrNotExist) {
			continue
		}
		if err != nil {
			return copied, err
		}
		w, err := to.Create(ctx, key)
		if err != nil {
			r.Close()
			return copied, err
		}
		_, err = io.Copy(w, r)
		r.Close()
		if err == nil {
			err = w.Commit()
		}
		if err != nil {
			w.Abort()
			return copied, err
		}
		copied = append(copied, key)
	}
	return copied, nil
}
