package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// TEMPORARY: a stand-in for train/checkpoint until it lands.

type ckptFile struct {
	Name  string
	Write func(io.Writer) error
}

func saveCheckpoint(ctx context.Context, root string, step int, files []ckptFile, keep int) (string, error) {
	dir := filepath.Join(root, fmt.Sprintf("step-%08d", step))
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		w, err := os.Create(filepath.Join(tmp, f.Name))
		if err != nil {
			return "", err
		}
		if err := f.Write(w); err != nil {
			w.Close()
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

func latestCheckpoint(ctx context.Context, root string) (string, int, bool, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	var steps []int
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), "step-"); ok && !strings.HasSuffix(s, ".tmp") {
			n, _ := strconv.Atoi(s)
			steps = append(steps, n)
		}
	}
	if len(steps) == 0 {
		return "", 0, false, nil
	}
	sort.Ints(steps)
	n := steps[len(steps)-1]
	return filepath.Join(root, fmt.Sprintf("step-%08d", n)), n, true, nil
}

func resolveCheckpoint(ctx context.Context, path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, StateFile)); err == nil {
		return path, nil
	}
	dir, _, found, err := latestCheckpoint(ctx, filepath.Join(path, CheckpointsDir))
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%s: %w", path, errNoCheckpoint)
	}
	return dir, nil
}

func readCheckpointFile(ctx context.Context, dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, name))
}
