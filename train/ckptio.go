package train

import (
	"context"
	"errors"
	"log/slog"

	"gptkit/train/checkpoint"
)

// The trainer's use of train/checkpoint: one place, so the rest reads as the
// trainer's own vocabulary.

type ckptFile = checkpoint.File

// saveCheckpoint writes files as the checkpoint of step under root, keeping the
// newest keep (0: all); what it removes or replaces gets a line on log.
func saveCheckpoint(ctx context.Context, root string, step int, files []ckptFile, keep int, log *slog.Logger) (string, error) {
	return checkpoint.Manager{Logger: log}.Save(ctx, root, int64(step), files, keep)
}

// latestCheckpoint finds the newest complete checkpoint under root; found is false
// when there is none (or no root). Every newer checkpoint it skips (incomplete or
// corrupt) gets a warning on log naming it and why.
func latestCheckpoint(ctx context.Context, root string, log *slog.Logger) (dir string, step int, found bool, err error) {
	dir, s, err := checkpoint.Manager{Logger: log}.Latest(ctx, root)
	if errors.Is(err, checkpoint.ErrNone) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	return dir, int(s), true, nil
}

// resolveCheckpoint turns a checkpoint directory, a run directory or a checkpoint
// root into a checkpoint directory, warning on log about the newer ones it skips.
func resolveCheckpoint(ctx context.Context, path string, log *slog.Logger) (string, error) {
	return checkpoint.Manager{Logger: log}.Resolve(ctx, path)
}

// readCheckpointFile returns a checkpoint file's contents, verified against the
// checkpoint's manifest.
func readCheckpointFile(ctx context.Context, dir, name string) ([]byte, error) {
	return checkpoint.ReadFile(ctx, dir, name)
}
