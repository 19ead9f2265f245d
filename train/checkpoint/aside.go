package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AsidePrefix starts the name of a directory that SetAsideNewer moved checkpoints
// into: Latest, Scan and prune do not look inside it, and nothing removes it.
const AsidePrefix = "abandoned-"

// SetAsideNewer moves every checkpoint beside dir whose step is higher than dir's
// (complete or not) into a new directory of dir's root, AsidePrefix + "after-" +
// dir's name + a UTC time, and returns that directory and the steps moved (none: ""
// and nil). A run rolled back to dir and continued would otherwise find its own
// later checkpoints outranked by those of the run it abandoned: resume auto would
// jump back to them, and pruning would keep them and remove its own. Local roots
// only: on S3 it returns an error naming the newer checkpoints (moving them is a
// copy of every file).
func (m Manager) SetAsideNewer(ctx context.Context, dir string) (string, []int64, error) {
	root, name, err := splitDir(dir)
	if err != nil {
		return "", nil, err
	}
	step, _ := parseDirName(name)
	b, err := m.backendFor(ctx, root, false)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: set aside the checkpoints after %s: %w", dir, err)
	}
	// Listed, not read: their checkpoint.json says nothing the move needs (it read
	// every one, one GET each on S3, at each fallback from a damaged checkpoint).
	cands, _, err := b.list(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: set aside the checkpoints after %s: %w", dir, err)
	}
	var newer []int64
	var names []string
	for _, e := range cands {
		if e.Step > step {
			newer = append(newer, e.Step)
			names = append(names, DirName(e.Step))
		}
	}
	if len(newer) == 0 {
		return "", nil, nil
	}
	lb, ok := b.(*localBackend)
	if !ok {
		return "", nil, fmt.Errorf("checkpoint: %s holds checkpoints after %s (%s) of the run being rolled back, and moving them aside on S3 is not done here: a later resume auto would continue from them",
			root, name, strings.Join(names, ", "))
	}
	aside := AsidePrefix + "after-" + name + "-" + time.Now().UTC().Format("20060102T150405Z")
	asideDir := filepath.Join(lb.root, aside)
	for i := 2; ; i++ {
		err := os.Mkdir(asideDir, 0o777)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return "", nil, fmt.Errorf("checkpoint: set aside the checkpoints after %s: %w", dir, err)
		}
		// Two rollbacks to one step within a second.
		asideDir = filepath.Join(lb.root, fmt.Sprintf("%s-%d", aside, i))
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(lb.root, n), filepath.Join(asideDir, n)); err != nil {
			return "", nil, fmt.Errorf("checkpoint: set aside %s: %w", filepath.Join(lb.root, n), err)
		}
	}
	if err := errors.Join(syncDir(asideDir), syncDir(lb.root)); err != nil {
		return "", nil, fmt.Errorf("checkpoint: set aside the checkpoints after %s: %w", dir, err)
	}
	return asideDir, newer, nil
}
