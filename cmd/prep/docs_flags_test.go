package main

import (
	"bytes"
	"context"
	"testing"

	"gptkit/internal/docstest"
)

// TestDocsNameEveryFlag: docs/commands.md names every flag that each prep command's -h
// lists, and names each among the commands taking the shared --tokenizer* flags.
func TestDocsNameEveryFlag(t *testing.T) {
	docstest.CheckCommands(t, "../../docs/commands.md", "prep", []string{"pile", "shakespeare", "custom"}, false, func(args []string) (string, int) {
		var out bytes.Buffer
		code := run(context.Background(), args, &out, &out)
		return out.String(), code
	})
}
