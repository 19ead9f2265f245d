package main

import (
	"os"
	"strings"
	"testing"

	"gptkit/prep"
)

// TestDocsNameEveryFormat: docs/commands.md's lists of the input formats of `prep
// custom` and `tokenize run` name every suffix the readers take (prep.CheckFormatName's
// list): they lacked .txt.zst and .txt.gz, and tokenize run's .json.gz and .zip too.
func TestDocsNameEveryFormat(t *testing.T) {
	err := prep.CheckFormatName("x")
	if err == nil {
		t.Fatal("CheckFormatName accepted a name without a suffix")
	}
	_, list, ok := strings.Cut(err.Error(), "one of ")
	if !ok {
		t.Fatalf("no list of suffixes in %q", err)
	}
	suffixes := strings.Split(list, ", ")
	data, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, sec := range []struct{ name, from, to string }{
		{"prep custom", "`prep custom` takes ", "from local paths"},
		{"tokenize run", "Reads JSONL (", "drops empty documents"},
	} {
		i := strings.Index(doc, sec.from)
		j := strings.Index(doc[max(i, 0):], sec.to)
		if i < 0 || j < 0 {
			t.Fatalf("docs/commands.md: no %s paragraph (%q ... %q)", sec.name, sec.from, sec.to)
		}
		para := doc[i : i+j]
		for _, suf := range suffixes {
			if !strings.Contains(para, "`"+suf+"`") {
				t.Errorf("docs/commands.md: the %s paragraph does not name %s", sec.name, suf)
			}
		}
	}
}
