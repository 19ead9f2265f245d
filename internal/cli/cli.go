// Package cli is what the gptkit commands share on their command lines: subcommands built
// on stdlib flag sets whose -h lists every flag with its default, the exit statuses, and
// the one line a failed command leaves on stderr.
//
//	c := cli.NewCommand("shards", "info", "DIR [--json]", "Summarizes a dataset.")
//	asJSON := c.Flags.Bool("json", false, "print the manifest as JSON")
//	args, code, ok := c.ParseArgs(args, stderr) // flags and arguments in any order
//	if !ok {
//		return code // cli.ExitOK after -h, cli.ExitUsage after a bad flag
//	}
//	...
//	return cli.Fail(stderr, "shards info", err) // "shards info: <err on one line>", ExitFailure
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"gptkit/internal/redact"
)

// Exit statuses of every gptkit command.
const (
	ExitOK      = 0 // success, or -h
	ExitFailure = 1 // the command ran and failed (one line on stderr)
	ExitUsage   = 2 // a bad command line
)

// Command is a subcommand's flag set with its help text.
type Command struct {
	Prog     string // the program, e.g. "tokenize"
	Name     string // the subcommand, e.g. "encode"
	Synopsis string // the usage line after "PROG NAME"
	Summary  string // what the command does (may span lines)
	Flags    *flag.FlagSet
	// ReadsStdin marks a command that takes its input on stdin alone (tokenize encode,
	// decode): Parse's error for an argument that is not a flag then says to give it
	// as "< FILE", the form a user of tools that take file arguments misses.
	ReadsStdin bool
}

// NewCommand makes a subcommand with an empty flag set that reports nothing itself:
// Parse and ParseArgs print errors and help.
func NewCommand(prog, name, synopsis, summary string) *Command {
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Prog: prog, Name: name, Synopsis: synopsis, Summary: summary, Flags: fs}
}

// Parse parses args, which must be flags only. ok is false when the caller should return
// code: ExitOK after -h, ExitUsage after a bad flag or a stray argument.
func (c *Command) Parse(args []string, stderr io.Writer) (code int, ok bool) {
	err := c.Flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.PrintHelp(stderr)
		return ExitOK, false
	case err != nil:
		return c.UsageError(stderr, err.Error()), false
	case c.Flags.NArg() > 0:
		msg := StrayArgument(c.Flags, args)
		if stray := c.Flags.Arg(0); c.ReadsStdin && msg == fmt.Sprintf("unexpected argument %q", stray) {
			msg += fmt.Sprintf(": %s %s reads its input on stdin, not from files named as arguments: give it as < %s", c.Prog, c.Name, stray)
		}
		return c.UsageError(stderr, msg), false
	}
	return ExitOK, true
}

// IsSet reports whether the flag name was given on the command line.
func (c *Command) IsSet(name string) bool {
	set := false
	c.Flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// StrayArgument is the usage message for the first argument that fs, having parsed
// args, left over. When it is a true/false value given after a boolean flag with a
// space ("--bias false", which Go's flag package reads as --bias and a stray
// "false"), it names the form that works (--bias=false).
func StrayArgument(fs *flag.FlagSet, args []string) string {
	stray := fs.Arg(0)
	msg := fmt.Sprintf("unexpected argument %q", stray)
	i := len(args) - fs.NArg()
	if i < 1 || i > len(args) {
		return msg
	}
	prev := args[i-1]
	name := strings.TrimLeft(prev, "-")
	if _, err := strconv.ParseBool(stray); err != nil || name == prev || strings.Contains(name, "=") {
		return msg
	}
	if f := fs.Lookup(name); f != nil {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return fmt.Sprintf("%s: a true/false flag takes its value after \"=\": --%s=%s", msg, name, stray)
		}
	}
	return msg
}

// ParseArgs parses flags and positional arguments in any order ("DIR --json" as well as
// "--json DIR"; everything after "--" is positional) and returns the positional ones. ok is
// false when the caller should return code, as for Parse.
func (c *Command) ParseArgs(args []string, stderr io.Writer) (positional []string, code int, ok bool) {
	for {
		err := c.Flags.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			c.PrintHelp(stderr)
			return nil, ExitOK, false
		case err != nil:
			return nil, c.UsageError(stderr, err.Error()), false
		}
		rest := c.Flags.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), ExitOK, true
		}
		if len(rest) == 0 {
			return positional, ExitOK, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// UsageError prints msg and where to find help, and returns ExitUsage.
func (c *Command) UsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "%s %s: %s (run '%s %s -h' for usage)\n", c.Prog, c.Name, redact.String(msg), c.Prog, c.Name)
	return ExitUsage
}

// PrintHelp prints the usage line, the summary and every flag with its default (none
// for an empty string, a switch that is off or a flag its usage says is required).
func (c *Command) PrintHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace(c.Prog+" "+c.Name+" "+c.Synopsis), c.Summary)
	hasFlags := false
	c.Flags.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
	}
	c.Flags.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		// The default, except an empty string's or a switch's off (as Go's flag
		// package prints them): "(required) (default \"\")" said nothing; nor does a
		// flag.Value whose default prints as nothing ("(default )").
		def := " (default " + f.DefValue + ")"
		if f.DefValue == "" {
			def = ""
		}
		if getter, ok := f.Value.(flag.Getter); ok {
			switch v := getter.Get().(type) {
			case string:
				def = fmt.Sprintf(" (default %q)", v)
				if v == "" {
					def = ""
				}
			case bool:
				if !v {
					def = ""
				}
			}
		}
		// A required flag has no default to print: "(required) (default 0)" of
		// tokenize train --vocab-size said both.
		if strings.Contains(usage, "(required") {
			def = ""
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-" // -d DIR, as the usage lines write it
		}
		fmt.Fprintf(w, "  %s%s%s\n    \t%s%s\n", dash, f.Name, typ, usage, def)
	})
}

// Fail prints err as the one line a failed command leaves on stderr, after who (e.g.
// "tokenize encode"), and returns ExitFailure. A multi-line error (a message and its
// "---> HINT:" line) is folded onto that line. Credentials in URLs are redacted.
func Fail(stderr io.Writer, who string, err error) int {
	msg := withoutPrefix(OneLine(err.Error()), who+": ")
	if prog, sub, ok := strings.Cut(who, " "); ok {
		// "train export": its package's errors say "train: " too, and often the
		// operation after it ("train: export to DIR: ...", "shards: merge-parts DIR:
		// ..."), which the command's name has just said.
		if rest := withoutPrefix(msg, prog+": "); rest != msg {
			msg = rest
			if after, ok := strings.CutPrefix(msg, sub); ok && (strings.HasPrefix(after, ": ") || strings.HasPrefix(after, " ")) {
				msg = strings.TrimPrefix(strings.TrimPrefix(after, ":"), " ")
			}
		}
	}
	fmt.Fprintf(stderr, "%s: %s\n", who, redact.String(msg))
	return ExitFailure
}

// withoutPrefix removes every leading copy of prefix from msg: the packages name
// themselves in their errors ("train: resume ..."), and the command's own name before
// it would say it twice.
func withoutPrefix(msg, prefix string) string {
	for strings.HasPrefix(msg, prefix) {
		msg = msg[len(prefix):]
	}
	return msg
}

// Interrupted replaces err with a plain "interrupted" once ctx is canceled (one of
// StopSignals), whatever the step that noticed.
func Interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}

// InterruptedResumable is Interrupted for a command whose rerun continues where
// it stopped (a journal of its finished work): the line says so.
func InterruptedResumable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("interrupted (rerun the same command to continue where it stopped)")
	}
	return err
}

// OneLine folds a message onto one line, collapsing runs of white space.
func OneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// StopSignals are the signals that stop a command in order (a checkpoint saved, a
// journal a rerun continues from): SIGINT, SIGTERM, SIGHUP (the terminal or ssh
// session gone, which would otherwise end the process where it stands) and SIGQUIT
// (Ctrl-\, which torchrun treats as SIGTERM; Go's own handling dumped every
// goroutine's stack and ended the process without its checkpoint), each unless the
// process was started with it ignored (nohup: asking for it would undo that).
func StopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// Main runs a command's run function with a context that StopSignals cancel, and
// exits with the status it returns.
func Main(run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), StopSignals()...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
