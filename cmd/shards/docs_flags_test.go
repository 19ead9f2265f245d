package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gptkit/internal/docstest"
)

// TestDocsNameEveryFlag: docs/commands.md names every flag that each shards command's -h
// lists, and names each among the commands taking the shared --tokenizer* flags.
func TestDocsNameEveryFlag(t *testing.T) {
	for _, sub := range []string{"info", "verify", "cat", "merge", "merge-parts", "convert"} {
		command := strings.TrimSpace("shards " + sub)
		args := []string{"-h"}
		if sub != "" {
			args = []string{sub, "-h"}
		}
		var out bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("%s -h: exit %d\n%s", command, code, out.String())
		}
		docstest.CheckFlags(t, "../../docs/commands.md", command, out.String(), false, 1)
	}
}
