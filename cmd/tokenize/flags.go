package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// command is a subcommand's flag set with its help text.
type command struct {
	name     string // e.g. "encode"
	synopsis string // the usage line after "tokenize NAME"
	summary  string // one line on what the command does
	flags    *flag.FlagSet
}

func newCommand(name, synopsis, summary string) *command {
	fs := flag.NewFlagSet("tokenize "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse prints errors and help itself
	fs.Usage = func() {}
	return &command{name: name, synopsis: synopsis, summary: summary, flags: fs}
}

// parse parses args. ok is false when the caller should return code: exitOK after -h,
// exitUsage after a bad flag or a stray argument.
func (c *command) parse(args []string, stderr io.Writer) (code int, ok bool) {
	err := c.flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(stderr)
		return exitOK, false
	case err != nil:
		return c.usageError(stderr, err.Error()), false
	case c.flags.NArg() > 0:
		return c.usageError(stderr, fmt.Sprintf("unexpected argument %q", c.flags.Arg(0))), false
	}
	return exitOK, true
}

// usageError prints msg and where to find help, and returns exitUsage.
func (c *command) usageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "tokenize %s: %s (run 'tokenize %s -h' for usage)\n", c.name, msg, c.name)
	return exitUsage
}

// printHelp prints the usage line, the summary and every flag with its default.
func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: tokenize %s %s\n\n%s\n\nFlags:\n", c.name, c.synopsis, c.summary)
	c.flags.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		def := f.DefValue
		if getter, ok := f.Value.(flag.Getter); ok {
			if _, isString := getter.Get().(string); isString {
				def = fmt.Sprintf("%q", def)
			}
		}
		fmt.Fprintf(w, "  --%s%s\n    \t%s (default %s)\n", f.Name, typ, usage, def)
	})
}

// tokenizerFlags pick the tokenizer; encode and decode share them.
type tokenizerFlags struct {
	spec     string
	url      string
	sha256   string
	cacheDir string
}

func (tf *tokenizerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.spec, "tokenizer", "", "tokenizer `SPEC` (required): a tokenizer.json, a directory holding one (or vocab.json+merges.txt, or chars.json), a .tiktoken file, or a name: "+strings.Join(spec.Names(), ", "))
	fs.StringVar(&tf.url, "tokenizer-url", "", "download a named tokenizer from this `URL` instead of the canonical one (gpt2, r50k_base: a base URL that /vocab.json and /merges.txt are appended to)")
	fs.StringVar(&tf.sha256, "tokenizer-sha256", "", "expected sha256 `HEX` of the downloaded file instead of the canonical one (gpt2, r50k_base: VOCAB,MERGES)")
	fs.StringVar(&tf.cacheDir, "cache-dir", "", "`DIR` caching named tokenizers (empty: $GPTKIT_CACHE/tokenizers, else the user cache directory's gptkit/tokenizers)")
}

// load resolves the tokenizer, logging downloads to stderr.
func (tf *tokenizerFlags) load(ctx context.Context, stderr io.Writer) (*tokenize.Tokenizer, error) {
	return spec.Load(ctx, tf.spec, spec.Options{
		CacheDir: tf.cacheDir,
		URL:      tf.url,
		SHA256:   tf.sha256,
		Logger:   slog.New(slog.NewTextHandler(stderr, nil)),
	})
}
