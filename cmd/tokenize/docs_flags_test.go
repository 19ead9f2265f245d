package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gptkit/internal/docstest"
)

// TestDocsNameEveryFlag: docs/commands.md names every flag that each tokenize command's -h
// lists, and names each among the commands taking the shared --tokenizer* flags.
func TestDocsNameEveryFlag(t *testing.T) {
	docstest.CheckCommands(t, "../../docs/commands.md", "tokenize", []string{"encode", "decode", "run", "train"}, false, func(args []string) (string, int) {
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &out)
		return out.String(), code
	})
}
