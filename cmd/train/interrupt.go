package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"gptkit/train/dist"
)

// exitOnSecondInterrupt makes a second SIGINT (Ctrl-C) after the first one that
// cancelled ctx end the process at once, with dist.ExitInterrupted, as PyTorch
// scripts and torchrun do: the first lets the step under way finish and a
// checkpoint be saved, which on a large model takes a while. Checkpoints are
// published atomically, so one cut short is discarded and the newest complete one
// stays. SIGTERM never forces the exit (a scheduler, or a launcher forwarding its
// own, may send it more than once). stop ends the watch. (It writes nothing at the
// first: the trainer's logger, and its live line, own stderr while the step runs.)
func exitOnSecondInterrupt(ctx context.Context, stderr io.Writer) (stop func()) {
	done := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		signal.Notify(sigs, os.Interrupt)
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "\ntrain: second interrupt: exiting at once (a checkpoint being written is discarded; the newest complete one stays)")
			os.Exit(dist.ExitInterrupted)
		case <-done:
		}
	}()
	return func() {
		close(done)
		signal.Stop(sigs)
	}
}
