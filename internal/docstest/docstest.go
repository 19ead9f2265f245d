// Package docstest checks, for the commands' tests, that the reference page
// docs/commands.md names every flag a command's -h lists.
package docstest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// flagLine is a flag's line in a -h listing ("  --text-key FIELD", "  -d DIR").
var flagLine = regexp.MustCompile(`(?m)^  (--?[a-z0-9][a-z0-9-]*)`)

// Flags returns the flags a command's -h output lists, in order.
func Flags(help string) []string {
	var out []string
	for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
		out = append(out, m[1])
	}
	return out
}

// CheckFlags fails t for each flag of help (the -h output of command, "tokenize run")
// that the page at path does not name: as the flag itself (`--text-key`, followed by no
// further letter of a name), or, where keys is set (train's flags, documented as its
// config keys), as the key in backticks (--n-layer as `n_layer`). The flags of the
// shared tokenizer flag set (--tokenizer-url and the like), documented once, must have
// command (or its tool) in the page's list of the commands taking that set. It fails too when
// help lists fewer than min flags: a listing that moved or changed its form.
func CheckFlags(t *testing.T, path, command, help string, keys bool, min int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	flags := Flags(help)
	if len(flags) < min {
		t.Fatalf("%s -h lists %d flags, want at least %d: did its help change form?\n%s", command, len(flags), min, help)
	}
	for _, f := range flags {
		if strings.HasPrefix(f, "--tokenizer-") {
			if !sharedTokenizerList(doc, command) {
				t.Errorf("%s: %s takes %s, but the page's list of the commands taking the shared --tokenizer* flags (\"taken by every command that loads a tokenizer (...)\") does not name it", path, command, f)
			}
			continue
		}
		if named(doc, f) {
			continue
		}
		if keys && strings.Contains(doc, "`"+strings.ReplaceAll(strings.TrimLeft(f, "-"), "-", "_")+"`") {
			continue
		}
		t.Errorf("%s: %s takes %s (its -h lists it), which the page does not name", path, command, f)
	}
}

// CheckCommands runs CheckFlags on the -h of each of tool's subcommands subs ("" for
// the tool's own), got from help (the tool's main, given args ending in -h: its output
// and exit status), against docs/commands.md at path; keys is CheckFlags' keys for the
// tool's own -h (train's flags are its config keys).
func CheckCommands(t *testing.T, path, tool string, subs []string, keys bool, help func(args []string) (string, int)) {
	t.Helper()
	for _, sub := range subs {
		command := strings.TrimSpace(tool + " " + sub)
		args := []string{"-h"}
		if sub != "" {
			args = []string{sub, "-h"}
		}
		out, code := help(args)
		if code != 0 {
			t.Fatalf("%s -h: exit %d\n%s", command, code, out)
		}
		CheckFlags(t, path, command, out, keys && sub == "", 1)
	}
}

// named reports whether doc holds flag f as a whole flag name.
func named(doc, f string) bool {
	for i := 0; ; {
		j := strings.Index(doc[i:], f)
		if j < 0 {
			return false
		}
		end := i + j + len(f)
		if end == len(doc) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-_", rune(doc[end])) {
			if i+j == 0 || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-", rune(doc[i+j-1])) {
				return true
			}
		}
		i = end
	}
}

// sharedTokenizerList reports whether the page's sentence on the shared --tokenizer*
// flag set ("... taken by every command that loads a tokenizer (`tokenize`, ...)")
// names command or its tool.
func sharedTokenizerList(doc, command string) bool {
	flat := strings.Join(strings.Fields(doc), " ")
	_, rest, ok := strings.Cut(flat, "taken by every command that loads a tokenizer (")
	if !ok {
		return false
	}
	list, _, _ := strings.Cut(rest, ")")
	tool, _, _ := strings.Cut(command, " ")
	return strings.Contains(list, "`"+command+"`") || strings.Contains(list, "`"+tool+"`")
}
