package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		json bool
		n    int
	}{
		{[]string{"DIR", "--json"}, []string{"DIR"}, true, 0},
		{[]string{"--json", "DIR"}, []string{"DIR"}, true, 0},
		{[]string{"A", "--n", "3", "B", "C"}, []string{"A", "B", "C"}, false, 3},
		{[]string{"A", "--", "--json", "-n"}, []string{"A", "--json", "-n"}, false, 0},
		{nil, nil, false, 0},
	} {
		c := NewCommand("prog", "cmd", "DIR", "Does things.")
		asJSON := c.Flags.Bool("json", false, "json")
		n := c.Flags.Int("n", 0, "n")
		var stderr bytes.Buffer
		pos, code, ok := c.ParseArgs(tc.args, &stderr)
		if !ok || code != ExitOK || !slices.Equal(pos, tc.pos) || *asJSON != tc.json || *n != tc.n {
			t.Errorf("%q: %q %d %v json=%v n=%d (%s)", tc.args, pos, code, ok, *asJSON, *n, stderr.String())
		}
	}
}

func TestParseErrorsAndHelp(t *testing.T) {
	c := NewCommand("prog", "cmd", "DIR [--json]", "Does things.")
	c.Flags.Bool("json", false, "print JSON")
	c.Flags.String("name", "x", "the `NAME`")
	c.Flags.String("out", "", "the `DIR` (required)")
	c.Flags.Bool("on", true, "a switch on by default")
	c.Flags.Int("size", 0, "the `N` (required)") // printed "(required) (default 0)"
	var stderr bytes.Buffer
	if _, code, ok := c.ParseArgs([]string{"DIR", "-h"}, &stderr); ok || code != ExitOK {
		t.Fatalf("-h: %d %v", code, ok)
	}
	want := "usage: prog cmd DIR [--json]\n\nDoes things.\n\nFlags:\n  --json\n    \tprint JSON\n  --name NAME\n    \tthe NAME (default \"x\")\n" +
		"  --on\n    \ta switch on by default (default true)\n  --out DIR\n    \tthe DIR (required)\n  --size N\n    \tthe N (required)\n"
	if stderr.String() != want {
		t.Errorf("help:\n%s\nwant:\n%s", stderr.String(), want)
	}
	stderr.Reset()
	if _, code, ok := c.ParseArgs([]string{"DIR", "--bogus"}, &stderr); ok || code != ExitUsage ||
		stderr.String() != "prog cmd: flag provided but not defined: -bogus (run 'prog cmd -h' for usage)\n" {
		t.Errorf("bad flag: %d %v %q", code, ok, stderr.String())
	}
	stderr.Reset()
	if code, ok := c.Parse([]string{"--json", "DIR"}, &stderr); ok || code != ExitUsage || !strings.Contains(stderr.String(), `unexpected argument "DIR"`) {
		t.Errorf("Parse with an argument: %d %v %q", code, ok, stderr.String())
	}
}

func TestFail(t *testing.T) {
	var stderr bytes.Buffer
	if code := Fail(&stderr, "prog cmd", errors.New("shards: x.bin: bad\n---> HINT:  fix it")); code != ExitFailure ||
		stderr.String() != "prog cmd: shards: x.bin: bad ---> HINT: fix it\n" {
		t.Errorf("Fail: %d %q", code, stderr.String())
	}
	// The command's name once, however many layers named it.
	stderr.Reset()
	Fail(&stderr, "train", fmt.Errorf("train: %w", errors.New("train: resume x: no checkpoint")))
	if got := stderr.String(); got != "train: resume x: no checkpoint\n" {
		t.Errorf("Fail with the command's own prefix: %q", got)
	}
	// A package naming the subcommand's operation after its own name: said once.
	for _, tc := range []struct{ who, err, want string }{
		{"shards merge-parts", "shards: merge-parts out: part 1 of 2: missing", "shards merge-parts: out: part 1 of 2: missing\n"},
		{"shards merge-parts", "shards: merge-parts: out: missing", "shards merge-parts: out: missing\n"},
		{"train export", "train: export to out: denied", "train export: to out: denied\n"},
		{"shards merge", "shards: merge-parts out: x", "shards merge: merge-parts out: x\n"},
		{"shards merge", "merge is a word", "shards merge: merge is a word\n"},
	} {
		stderr.Reset()
		Fail(&stderr, tc.who, errors.New(tc.err))
		if got := stderr.String(); got != tc.want {
			t.Errorf("Fail(%q, %q): %q, want %q", tc.who, tc.err, got, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := errors.New("read: context canceled")
	if Interrupted(ctx, err) != err {
		t.Error("Interrupted changed the error of a live context")
	}
	cancel()
	if got := Interrupted(ctx, err); got.Error() != "interrupted" {
		t.Errorf("Interrupted: %v", got)
	}
}

// TestStrayArgument: "--flag false" on a boolean flag names the form that works;
// other stray arguments are named alone.
func TestStrayArgument(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bias", "false"}, `unexpected argument "false": a true/false flag takes its value after "=": --bias=false`},
		{[]string{"-n", "3", "-bias", "true", "x"}, `unexpected argument "true": a true/false flag takes its value after "=": --bias=true`},
		{[]string{"--bias=false", "false"}, `unexpected argument "false"`},
		{[]string{"--bias", "maybe"}, `unexpected argument "maybe"`},
		{[]string{"--", "false"}, `unexpected argument "false"`},
	} {
		c := NewCommand("p", "s", "", "")
		c.Flags.Bool("bias", true, "")
		c.Flags.Int("n", 0, "")
		var stderr strings.Builder
		if _, ok := c.Parse(tc.args, &stderr); ok || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// An interrupted command says "interrupted"; one whose rerun continues (tokenize
// run, prep) says so, the next step; before the interrupt errors pass through.
func TestInterruptedLines(t *testing.T) {
	boom := errors.New("boom")
	ctx, cancel := context.WithCancel(context.Background())
	if Interrupted(ctx, boom) != boom || InterruptedResumable(ctx, boom) != boom {
		t.Fatal("an error before any interrupt was replaced")
	}
	cancel()
	var out bytes.Buffer
	Fail(&out, "tokenize run", InterruptedResumable(ctx, boom))
	if got := strings.TrimSpace(out.String()); got != "tokenize run: interrupted (rerun the same command to continue where it stopped)" {
		t.Errorf("resumable: %q", got)
	}
	if err := Interrupted(ctx, boom); err.Error() != "interrupted" {
		t.Errorf("plain: %v", err)
	}
}
