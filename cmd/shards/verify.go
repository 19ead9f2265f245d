package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
)

// runVerify implements `shards verify`: every problem on stdout, one per line, then a
// verdict line; exit 1 if any problem is an error.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "verify", "DIR|PREFIX [--allow-merged-doc-idx] [--strict]",
		"Checks the dataset in DIR (a directory or s3://bucket/prefix): the manifest, and for every\n"+
			"shard it names the files' presence, sha256, structure and counts, and warns about shard\n"+
			"files the manifest does not name. Given a bare GPT-NeoX shard PREFIX (PREFIX.idx +\n"+
			"PREFIX.bin, no manifest), checks its structure alone.\n\n"+
			"Prints each problem on stdout as one line, \"error: FILE: KIND: MESSAGE ---> HINT: ...\"\n"+
			"(\"warning: ...\" for oddities that do not stop readers), then a verdict line starting with\n"+
			"\"ok:\" or \"FAILED:\". Exits 1 on any problem, warnings included unless --strict=false;\n"+
			"else 0.\n\n"+
			"An s3:// dataset is read through the verified local copies in --cache-dir that cat, convert\n"+
			"and train map: a shard already there (same ETag and size) is not downloaded again, and every\n"+
			"copy is hashed and checked.")
	strict := c.Flags.Bool("strict", true, "exit 1 on warnings too (shard files the manifest does not name, a merged doc_idx); --strict=false exits 0 when only warnings remain")
	var allow allowMergedFlag
	allow.register(c.Flags)
	sf := storageFlags{log: newLogger(stderr)}
	sf.register(c.Flags, true)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.UsageError(stderr, "want exactly one DIR or PREFIX")
	}
	t, err := sf.openTarget(ctx, pos[0])
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if _, local := t.store.LocalPath(shards.ManifestName); !local {
		t.store = cachedReads{Store: t.store, cacheDir: sf.cacheDir}
	}
	var probs []shards.Problem
	if t.bare() {
		probs, err = shards.VerifyShard(ctx, t.store, t.prefix, nil, 0, allow.options()...)
	} else {
		probs, err = shards.Verify(ctx, t.store, "", allow.options()...)
	}
	if err == nil {
		err = ctx.Err() // an interrupted check may show up as problems; do not report those
	}
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	// A directory without a manifest that holds GPT-NeoX shards or a partitioned run's
	// parts needs another command, not a re-run of the stage: say so in the problem's own
	// hint, so that stdout and the summary on stderr agree.
	if hint := noManifestOnly(ctx, t, probs); hint != "" {
		fe := *probs[0].Err.(*shards.FormatError)
		fe.Hint = hint
		probs[0].Err = &fe
	}
	var errs, warns int
	var first string
	for _, p := range probs {
		line := problemLine(p)
		fmt.Fprintln(stdout, line)
		if p.Warning {
			warns++
		} else {
			errs++
			if first == "" {
				first = line
			}
		}
	}
	if errs > 0 || (*strict && warns > 0) {
		fmt.Fprintf(stdout, "FAILED: %s: %s, %s\n", t, plural(errs, "error"), plural(warns, "warning"))
		if errs == 0 {
			fmt.Fprintf(stderr, "shards verify: %s: %s and --strict (listed on stdout)\n", t, plural(warns, "warning"))
			return cli.ExitFailure
		}
		fmt.Fprintf(stderr, "shards verify: %s failed: %s (listed on stdout); the first: %s\n", t, plural(errs, "error"), first)
		return cli.ExitFailure
	}
	summary, err := verifiedSummary(ctx, t, allow.options())
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if warns > 0 {
		summary += ", " + plural(warns, "warning")
	}
	fmt.Fprintf(stdout, "ok: %s: %s\n", t, summary)
	return cli.ExitOK
}

// noManifestOnly is noManifestHint's "verify" hint when the only problem is a missing
// manifest (a *shards.FormatError) in a directory that holds GPT-NeoX shards or the
// parts of a partitioned run; "" otherwise.
func noManifestOnly(ctx context.Context, t target, probs []shards.Problem) string {
	if t.bare() || len(probs) != 1 || !errors.Is(probs[0].Err, shards.ErrMissing) || !strings.HasSuffix(probs[0].File, shards.ManifestName) {
		return ""
	}
	if _, ok := probs[0].Err.(*shards.FormatError); !ok {
		return ""
	}
	return noManifestHint(ctx, t, "verify")
}

// noManifestHint says what a dataset directory without a manifest holds, when that
// tells the next step: GPT-NeoX shards (shards cmd one as a bare prefix) or the parts
// of a partitioned run (merge them); "" otherwise. It is a clause ("it holds ...").
func noManifestHint(ctx context.Context, t target, cmd string) string {
	infos, err := t.store.List(ctx, "")
	if err != nil {
		return ""
	}
	var prefixes []string
	parts := map[string]bool{}
	for _, in := range infos {
		if p, ok := strings.CutSuffix(in.Key, ".idx"); ok && !strings.Contains(p, "/") {
			prefixes = append(prefixes, p)
		}
		if rest, ok := strings.CutPrefix(in.Key, shards.PartsDir+"/"); ok && strings.HasSuffix(rest, "/"+shards.ManifestName) {
			parts[strings.TrimSuffix(rest, "/"+shards.ManifestName)] = true
		}
	}
	dir := strings.TrimSuffix(t.String(), "/")
	switch {
	case len(prefixes) > 0:
		return fmt.Sprintf("it holds %s without a manifest: check one with `shards %s %s/%s`",
			plural(len(prefixes), "GPT-NeoX shard"), cmd, dir, prefixes[0])
	case len(parts) > 0:
		return fmt.Sprintf("it holds %s of a partitioned run in %s/%s/, not yet merged: once every part is done, `shards merge-parts %s` writes the manifest",
			plural(len(parts), "finished part"), dir, shards.PartsDir, dir)
	}
	return ""
}

// verifiedSummary says what a clean verify covered.
func verifiedSummary(ctx context.Context, t target, opts []shards.Option) (string, error) {
	if t.bare() {
		ix, err := readIndex(ctx, t, opts)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s, %d documents, %d tokens; structure valid (no manifest, so no checksums)",
			ix.DType(), ix.Len(), ix.NumTokens()), nil
	}
	m, err := shards.ReadManifest(ctx, t.store, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %d documents, %d tokens; checksums, structure and counts match the manifest",
		plural(len(m.Shards), "shard"), m.Documents, m.Tokens), nil
}

// problemLine is a problem on one line: "LEVEL: FILE: KIND[ at byte N][ (WHERE)]: MESSAGE
// ---> HINT: ..." where KIND names the sentinel (checksum mismatch, file truncated, ...).
func problemLine(p shards.Problem) string {
	level := "error"
	if p.Warning {
		level = "warning"
	}
	fe, ok := p.Err.(*shards.FormatError)
	if !ok {
		return level + ": " + cli.OneLine(p.Err.Error())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: ", level, fe.File)
	if fe.Err != nil {
		b.WriteString(strings.TrimPrefix(fe.Err.Error(), "shards: "))
	} else {
		b.WriteString("problem")
	}
	if fe.Offset >= 0 {
		fmt.Fprintf(&b, " at byte %d", fe.Offset)
	}
	if fe.Where != "" {
		fmt.Fprintf(&b, " (%s)", fe.Where)
	}
	b.WriteString(": " + fe.Msg)
	if fe.Hint != "" {
		b.WriteString(" ---> HINT: " + fe.Hint)
	}
	return cli.OneLine(b.String())
}

// plural is "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// cachedReads reads a remote store's objects through local copies in cacheDir
// (storage.Fetch), which verify then checks like any file; other methods go to Store.
type cachedReads struct {
	storage.Store
	cacheDir string
}

// Open fetches key into the cache (unless a copy with the object's ETag and size is
// there) and opens the copy.
func (c cachedReads) Open(ctx context.Context, key string) (storage.Object, error) {
	if key == shards.ManifestName {
		return c.Store.Open(ctx, key) // small, and it names what the copies are checked against
	}
	path, err := storage.Fetch(ctx, c.Store, key, c.cacheDir, "")
	if err != nil {
		return nil, err
	}
	dir, err := storage.Open(ctx, filepath.Dir(path), storage.Options{})
	if err != nil {
		return nil, err
	}
	return dir.Open(ctx, filepath.Base(path))
}
