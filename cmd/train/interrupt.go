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
// own, may send it more than once). stop ends the watch. At the first it says what
// happens, in one write to the process's stderr (a file: the trainer's logger and live
// line write there too, a line a write), unless a launcher started the process:
// the step under way finishes and a checkpoint is saved where stepping reports a
// step begun (train.Trainer.Stepping), else nothing is saved.
func exitOnSecondInterrupt(ctx context.Context, stderr io.Writer, stepping func() bool) (stop func()) {
	done := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		signal.Notify(sigs, os.Interrupt)
		ws := os.Getenv("WORLD_SIZE")
		launched := ws != "" && ws != "1" // a launcher says it for its ranks
		if f, ok := stderr.(*os.File); ok && !launched {
			// One write of its own to the process's stderr (the trainer's logger
			// and live line write there too, each line in one write): the step
			// under way may take a while, and silence invites the second Ctrl-C.
			// (Not to any other writer: a test's buffer is not safe for that.)
			if stepping() {
				f.WriteString("\ntrain: stopping: finishing the step under way and saving a checkpoint (Ctrl-C again exits at once, without it)\n")
			} else {
				f.WriteString("\ntrain: stopping before the first step: nothing to save (Ctrl-C again exits at once)\n")
			}
		}
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
