package main

import (
	"context"
	"fmt"
	"io"
)

// runTrain is a placeholder for `tokenize train`, which another engineer is writing in
// train.go. Delete this file (train_stub.go) when train.go lands.
func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tokenize train: not yet")
	return exitUsage
}
