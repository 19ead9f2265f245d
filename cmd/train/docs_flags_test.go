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
	docstest.CheckCommands(t, "../../docs/commands.md", "train", []string{"", "sample", "score", "export", "plot", "samples"}, true, func(args []string) (string, int) {
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &out)
		return out.String(), code
	})
}
