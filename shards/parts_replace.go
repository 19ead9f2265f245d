package shards

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gptkit/storage"
)

// removeReplaced removes the files of old, the dataset whose manifest MergeParts
// replaced in dir (Overwrite), that m, the manifest just written, does not use: the
// .bin and .idx of each of old's shards whose prefix m does not list, and the
// manifest of each part directory of old's run that held such shards and holds none
// of m's. Files old did not list are left alone, and so are old's shards in a part
// directory that now holds a part of another run than old's, or no part manifest (a
// task of another run may be writing there). MergeParts calls it only once m is
// written, so an interruption leaves at worst some files of the old dataset, never
// the new one short of a shard. It returns the keys removed and the failures,
// joined (the new dataset is complete either way).
func removeReplaced(ctx context.Context, st storage.Store, dir string, old, m *Manifest) (removed []string, err error) {
	keep, newDirs := map[string]bool{}, map[string]bool{}
	for _, s := range m.Shards {
		keep[ShardKey(dir, s)] = true
		newDirs[partDirOf(s.Prefix)] = true
	}
	oldJob, _ := old.Source["job"].(string)
	var errs []error
	del := func(key string) bool { // false: it is still there
		switch err := st.Delete(ctx, key); {
		case err == nil:
			removed = append(removed, key)
		case !errors.Is(err, storage.ErrNotExist):
			errs = append(errs, fmt.Errorf("remove %s: %w", keyName(st, key), err))
			return false
		}
		return true
	}
	var gone []ShardInfo
	ours := map[string]bool{} // part directories not of m: do they hold old's run's part?
	for _, s := range old.Shards {
		if keep[ShardKey(dir, s)] {
			continue
		}
		gone = append(gone, s)
		if pd := partDirOf(s.Prefix); pd != "" && !newDirs[pd] {
			if _, seen := ours[pd]; !seen {
				pm, rerr := ReadManifest(ctx, st, join(dir, pd))
				ours[pd] = rerr == nil && oldJob != "" && pm.Part != nil && pm.Part.Job == oldJob
			}
		}
	}
	// A part's manifest goes first, as it would name shards no longer there (a later
	// merge-parts of those parts would fail on it, a rerun of that run take the part
	// for finished): an interruption leaves shard files that no manifest names, and
	// a part whose manifest stays keeps its shards.
	for _, pd := range slices.Sorted(maps.Keys(ours)) {
		if ours[pd] {
			ours[pd] = del(ManifestKey(join(dir, pd)))
		}
	}
	for _, s := range gone {
		if pd := partDirOf(s.Prefix); pd != "" && !newDirs[pd] && !ours[pd] {
			continue
		}
		del(ShardKey(dir, s) + ".bin")
		del(ShardKey(dir, s) + ".idx")
	}
	return removed, errors.Join(errs...)
}

// partDirOf is the part directory (parts/part-IIIII-of-WWWWW) a shard prefix lies
// in, or "" if it lies in none.
func partDirOf(prefix string) string {
	if m := partDirRE.FindString(prefix); m != "" {
		return strings.TrimSuffix(m, "/")
	}
	return ""
}
