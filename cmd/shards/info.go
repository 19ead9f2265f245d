package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gptkit/internal/cli"
	"gptkit/shards"
)

// runInfo implements `shards info`: a dataset's manifest, summarized or as JSON.
func runInfo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "info", "DIR [--json]",
		"Summarizes the dataset in DIR (a directory or s3://bucket/prefix) from its manifest:\n"+
			"tokenizer, dtype, documents, tokens, the input records its run dropped (bad, empty, ...),\n"+
			"each shard's documents and tokens, and where the data came from. With --json, prints\n"+
			"the manifest plus location, num_shards and token_bytes as one JSON object. DIR may also\n"+
			"be a bare GPT-NeoX shard PREFIX (its dtype and counts, from PREFIX.idx). Reads no token\n"+
			"data; `shards verify` checks it.")
	asJSON := c.Flags.Bool("json", false, "print one JSON object instead of the summary")
	var allow allowMergedFlag
	allow.register(c.Flags)
	sf := storageFlags{log: newLogger(stderr)}
	sf.register(c.Flags, false)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.UsageError(stderr, "want exactly one DIR")
	}
	t, err := sf.openTarget(ctx, pos[0])
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if t.bare() {
		ix, err := readIndex(ctx, t, allow.options())
		if err != nil {
			return fail(ctx, stderr, c.Name, err)
		}
		if err := printShardInfo(stdout, t, ix, *asJSON); err != nil {
			return fail(ctx, stderr, c.Name, err)
		}
		return cli.ExitOK
	}
	m, err := shards.ReadManifest(ctx, t.store, "")
	if errors.Is(err, shards.ErrMissing) {
		if hint := noManifestHint(ctx, t, "info"); hint != "" {
			err = fmt.Errorf("%s: no manifest.json (%s)", t, hint)
		}
	}
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if *asJSON {
		err = printManifestJSON(stdout, t.String(), m)
	} else {
		err = printManifest(stdout, t.String(), m)
	}
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	return cli.ExitOK
}

// manifestJSON is info --json's output: the manifest's fields and a few derived counts.
type manifestJSON struct {
	Location string `json:"location"`
	*shards.Manifest
	NumShards  int   `json:"num_shards"`
	TokenBytes int64 `json:"token_bytes"` // total size of the .bin files
}

func printManifestJSON(w io.Writer, location string, m *shards.Manifest) error {
	return writeJSON(w, manifestJSON{Location: location, Manifest: m, NumShards: len(m.Shards),
		TokenBytes: m.Tokens * int64(m.DType.Size())})
}

// printManifest writes the human summary.
func printManifest(w io.Writer, location string, m *shards.Manifest) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := m.Tokenizer
	fmt.Fprintf(tw, "dataset\t%s\n", location)
	fmt.Fprintf(tw, "tokenizer\t%s (fingerprint %s, vocab %d, eod %s)\n", t.Name, shortFingerprint(t.Fingerprint), t.VocabSize, eodString(t.EODID))
	fmt.Fprintf(tw, "dtype\t%s\n", m.DType)
	fmt.Fprintf(tw, "documents\t%d\n", m.Documents)
	fmt.Fprintf(tw, "tokens\t%d (%s)\n", m.Tokens, byteSize(m.Tokens*int64(m.DType.Size())))
	fmt.Fprintf(tw, "shards\t%d\n", len(m.Shards))
	if p := m.Part; p != nil {
		fmt.Fprintf(tw, "part\t%d of %d of a partitioned run (job %s): `shards merge-parts` on the run's directory lists it\n", p.Index, p.Count, shortFingerprint(p.Job))
	}
	if m.Records != nil {
		fmt.Fprintf(tw, "records\t%s\n", recordsLine(m.Records))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var wp, wd, wt int
	for _, s := range m.Shards {
		wp = max(wp, len(s.Prefix))
		wd = max(wd, len(fmt.Sprint(s.Documents)))
		wt = max(wt, len(fmt.Sprint(s.Tokens)))
	}
	for _, s := range m.Shards {
		stripe := ""
		if st := s.Stripe; st != nil {
			stripe = fmt.Sprintf("  stripe %d of %s", st.Stripe, st.File)
		}
		fmt.Fprintf(w, "  %-*s  %*d documents  %*d tokens%s\n", wp, s.Prefix, wd, s.Documents, wt, s.Tokens, stripe)
	}
	if len(m.Source) > 0 {
		fmt.Fprintln(w, "source")
		keys := make([]string, 0, len(m.Source))
		for k := range m.Source {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, sourceValue(m.Source[k]))
		}
	}
	return nil
}

// printShardInfo describes a bare shard from its index.
func printShardInfo(w io.Writer, t target, ix *shards.Index, asJSON bool) error {
	docs := int64(ix.NumDocIdx() - 1)
	if ix.MergedDocIdx() {
		docs = int64(ix.Len())
	}
	if asJSON {
		return writeJSON(w, map[string]any{
			"location": t.String(), "dtype": ix.DType(), "documents": ix.Len(), "tokens": ix.NumTokens(),
			"doc_idx_documents": docs, "merged_doc_idx": ix.MergedDocIdx(), "token_bytes": ix.BinSize(),
		})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "shard\t%s (no manifest: no tokenizer, no checksums)\n", t)
	fmt.Fprintf(tw, "dtype\t%s\n", ix.DType())
	fmt.Fprintf(tw, "documents\t%d\n", ix.Len())
	if docs != int64(ix.Len()) {
		fmt.Fprintf(tw, "doc_idx\tgroups the sequences into %d documents\n", docs)
	}
	if ix.MergedDocIdx() {
		fmt.Fprintf(tw, "doc_idx\t[0] (GPT-NeoX merge_datasets.py output; read as one document per sequence)\n")
	}
	fmt.Fprintf(tw, "tokens\t%d (%s)\n", ix.NumTokens(), byteSize(ix.BinSize()))
	return tw.Flush()
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// shortFingerprint is the first 12 hex digits, enough to tell tokenizers apart by eye.
func shortFingerprint(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

func eodString(id int) string {
	if id < 0 {
		return "none"
	}
	return fmt.Sprint(id)
}

// sourceValue prints a provenance value: strings as they are, the rest as JSON.
func sourceValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// byteSize is n bytes in a unit a person reads at a glance.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), strings.ToUpper("KMGTPE")[exp])
}

// recordsLine says, split by split, what the run that made a dataset dropped or
// repaired of its input records (Manifest.Records).
func recordsLine(recs []shards.SplitRecords) string {
	var parts []string
	for _, r := range recs {
		var what []string
		add := func(n int64, format string) {
			if n > 0 {
				what = append(what, fmt.Sprintf(format, n))
			}
		}
		add(r.Bad, "%d bad skipped")
		add(r.Empty, "%d empty dropped")
		add(r.Filtered, "%d of other subsets dropped")
		add(r.InvalidUTF8, "%d kept with invalid UTF-8 replaced")
		add(r.Truncated, "%d damaged streams kept up to the damage")
		line := "none dropped"
		if len(what) > 0 {
			line = strings.Join(what, ", ")
		}
		if len(r.BadReasons) > 0 {
			var reasons []string
			for _, reason := range slices.Sorted(maps.Keys(r.BadReasons)) {
				reasons = append(reasons, fmt.Sprintf("%s %d", reason, r.BadReasons[reason]))
			}
			line += " (" + strings.Join(reasons, ", ") + ")"
		}
		split := r.Split
		if split == "" {
			split = "train"
		}
		parts = append(parts, split+": "+line)
	}
	return strings.Join(parts, "; ")
}
