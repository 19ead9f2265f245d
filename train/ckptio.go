package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"gptkit/storage"
	"gptkit/train/checkpoint"
)

// The trainer's use of train/checkpoint: one place, so the rest reads as the
// trainer's own vocabulary.

type ckptFile = checkpoint.File

// syncDir fsyncs a directory, making a rename in it durable (checkpoint.SyncDir; a
// variable: the tests see the calls).
var syncDir = checkpoint.SyncDir

// mkdirAll makes a directory and its missing parents durably, as the checkpoint
// directories are made (checkpoint.MkdirAll; a variable: the tests see the calls).
var mkdirAll = checkpoint.MkdirAll

// saveCheckpoint writes files as the checkpoint of step under root, keeping the
// newest keep (0: all); what it removes or replaces gets a line on log.
func saveCheckpoint(ctx context.Context, root string, step int, files []ckptFile, keep int, log *slog.Logger) (string, error) {
	return checkpoint.Manager{Logger: log}.Save(ctx, root, int64(step), files, keep)
}

// latestCheckpoint finds the newest complete checkpoint under root, opened against
// the checkpoint.json read to find it (its files are read without reading that
// again); found is false when there is none (or no root). Every newer checkpoint it
// skips (incomplete or corrupt) gets a warning on log naming it and why. A root
// holding checkpoints that are all damaged is an error, not "none": the run that
// starts afresh would truncate metrics.jsonl and replace them, where their files may
// still be restored.
func latestCheckpoint(ctx context.Context, root string, log *slog.Logger) (cd *ckptDir, found bool, err error) {
	m := checkpoint.Manager{Logger: log}
	cd, err = m.LatestDir(ctx, root)
	if errors.Is(err, checkpoint.ErrNone) {
		entries, err := m.Scan(ctx, root)
		if err != nil {
			return nil, false, nil // no root
		}
		var damaged []string
		for _, e := range entries {
			if !e.Unpublished {
				damaged = append(damaged, fmt.Sprintf("%s: %s", checkpoint.DirName(e.Step), e.Problem))
			}
		}
		if len(damaged) > 0 {
			return nil, false, fmt.Errorf("train: %s holds checkpoints, but none is complete (%s): starting afresh would replace them and the run's metrics\n---> HINT: restore the damaged files from a copy (%s lists each file's size and sha256), or move %s aside to start afresh",
				root, strings.Join(damaged, "; "), checkpoint.ManifestName, root)
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return cd, true, nil
}

// resolveCheckpoint turns a checkpoint directory, a run directory or a checkpoint
// root into a checkpoint directory with m, warning on m's logger about the newer
// ones it skips, opened against the checkpoint.json read to find it.
func resolveCheckpoint(ctx context.Context, m checkpoint.Manager, path string) (*ckptDir, error) {
	return m.ResolveDir(ctx, path)
}

// ckptDir is a checkpoint directory opened for reading: its checkpoint.json is read
// once, by openCheckpoint, latestCheckpoint or resolveCheckpoint, and its files are
// read against it.
type ckptDir = checkpoint.Dir

// openCheckpoint reads the checkpoint.json of the checkpoint in dir with m. The
// files are read with the Dir's ReadFile, or its Open to read front to back: at its
// end (io.EOF) the reader checks the file against checkpoint.json.
func openCheckpoint(ctx context.Context, m checkpoint.Manager, dir string) (*ckptDir, error) {
	return m.OpenDir(ctx, dir)
}

// ckpt is the trainer's checkpoint.Manager: its S3 settings are the run's (s3_endpoint,
// s3_path_style), as for its data, so that a resume from s3:// reaches the same server.
func (t *Trainer) ckpt() checkpoint.Manager {
	return checkpoint.Manager{Storage: storage.Options{S3Endpoint: t.cfg.S3Endpoint, S3PathStyle: t.cfg.S3PathStyle, Logger: t.log}, Logger: t.log}
}
