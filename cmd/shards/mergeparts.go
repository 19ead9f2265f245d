package main

import (
	"context"
	"fmt"
	"io"

	"gptkit/internal/cli"
	"gptkit/shards"
)

// runMergeParts implements `shards merge-parts`: the manifest of a partitioned run.
func runMergeParts(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("shards", "merge-parts", "DIR [flags]",
		"Finishes a partitioned run (`tokenize run` or `prep` with --num-workers W, one array-job\n"+
			"task per part): writes DIR/manifest.json listing the shards of every part in\n"+
			"DIR/parts/part-IIIII-of-WWWWW/ where they are (nothing is copied), split by split and\n"+
			"part by part (the shards of a compressed file that several parts shared, stripe by\n"+
			"stripe), so that the dataset holds the documents of a single-process run in the\n"+
			"same order. Refuses while a part has no manifest (killed, failed or still running),\n"+
			"naming it, and when the parts do not belong to one run (inputs, tokenizer, settings,\n"+
			"W). Merging again is a no-op. --overwrite replaces a dataset already in DIR and, once\n"+
			"the new manifest is written, removes the files of the replaced one that it does not use\n"+
			"(only those its manifest listed). DIR may be s3://bucket/prefix. Prints\n"+
			"\"DIR/manifest.json: D documents, T tokens, S shards\".")
	count := c.Flags.Int("num-workers", 0, "the run's number of parts `W` (0: from the parts found, which must all be of one run)")
	overwrite := c.Flags.Bool("overwrite", false, "replace a manifest in DIR that was not merged from these parts")
	sf := storageFlags{log: newLogger(stderr)}
	sf.register(c.Flags, false)
	pos, code, ok := c.ParseArgs(args, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.UsageError(stderr, "want one DIR")
	case *count < 0:
		return c.UsageError(stderr, "--num-workers must be at least 1 (or 0: from the parts)")
	}
	st, err := sf.openDatasetStore(ctx, pos[0])
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	res, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{
		Count: *count, Overwrite: *overwrite, Command: commandLine("merge-parts", args),
	})
	if err != nil {
		return fail(ctx, stderr, c.Name, err)
	}
	if res.Already {
		fmt.Fprintf(stderr, "%s: already merged from its %d parts: nothing to do\n", st, res.Parts)
	}
	if n := len(res.Removed); n > 0 {
		fmt.Fprintf(stderr, "%s: removed %d files of the replaced dataset that the new manifest does not use\n", st, n)
	}
	if res.RemoveErr != nil {
		// The new dataset is complete: only leftovers of the old one remain.
		sf.log.Warn("could not remove files of the replaced dataset; the new dataset is complete, remove them by hand", "err", res.RemoveErr)
	}
	printDatasetSummary(stdout, st.String(), res.Manifest)
	return cli.ExitOK
}
