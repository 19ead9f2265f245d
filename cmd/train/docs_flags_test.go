package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gptkit/internal/docstest"
)

// TestDocsNameEveryFlag: docs/commands.md names every flag that each train command's -h
// lists (it left `train export` out of the commands taking the shared --tokenizer* flags).
func TestDocsNameEveryFlag(t *testing.T) {
	for _, sub := range []string{"", "sample", "score", "export", "plot", "samples"} {
		command := strings.TrimSpace("train " + sub)
		args := []string{"-h"}
		if sub != "" {
			args = []string{sub, "-h"}
		}
		var out bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("%s -h: exit %d\n%s", command, code, out.String())
		}
		docstest.CheckFlags(t, "../../docs/commands.md", command, out.String(), sub == "", 1)
	}
}
