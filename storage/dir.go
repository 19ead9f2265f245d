package storage

// The directory store keeps each object in a file under root, at the key's path.
//
// Atomic writes: Create writes ".NAME.tmp-RANDOM" in the key's directory; Commit stamps its
// mtime with the current time (nanoseconds), fsyncs it, publishes it under the final name
// and fsyncs the directory. Abort, a failed Commit and Sweep remove temp files; List and
// Stat never see them, and CheckKey rejects keys that look like them. A writer holds a
// lock (flock) on its temp file until it is published or removed, so a temp file whose
// lock can be taken was left by a writer that died: Create removes those of the key it
// writes (a rerun cleans up after the run that was killed), and Sweep never removes a
// live writer's, whatever its age.
//
// ETags: "INODE-SIZE-MTIMENANOS" in hex, from one stat. Hashing would read whole objects
// (gigabytes) on every Stat. The triple changes with every Commit: a commit creates a new
// file (new inode while the old one still exists) and stamps a fresh nanosecond mtime, so
// a later version could only repeat an old ETag by reusing a freed inode with the same size
// in the same nanosecond. Writing into a published file in place (not through Create)
// changes size or mtime too, at the file system's timestamp granularity.
//
// Conditional commits: every Commit and Delete holds an exclusive lock on ".gptkit.lock"
// in the key's directory while it checks and publishes (flock(2), which excludes other
// processes, plus an in-process mutex, since flock over NFS degrades to per-process POSIX
// locks). IfMatch compares the ETag and renames under that lock; IfAbsent publishes with
// link(2), which fails if the name exists even for writers that do not take the lock, and
// falls back to check-and-rename under the lock on file systems without hard links. The
// lock files stay (one per directory written to); they are empty and never listed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gptkit/internal/durable"
)

type dirStore struct {
	root     string
	realRoot string // root with its symbolic links resolved
	log      *slog.Logger
}

func (s *dirStore) String() string { return s.root }

func (s *dirStore) path(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

func (s *dirStore) LocalPath(key string) (string, bool) {
	if CheckKey(key) != nil || s.outside(s.path(key)) != nil {
		return "", false // Open says why
	}
	return s.path(key), true
}

// outside refuses a path that symbolic links lead out of the store's directory: a
// dataset's shard linked to /etc/passwd, or to another dataset, is no object of this
// store (a copy of a dataset made with symlinks would silently read the original's
// changes). A missing path is not refused here: opening it says it is missing.
func (s *dirStore) outside(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(s.realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("storage: %s is a symbolic link to %s, outside the store's directory %s: refused (move or copy the file into the directory)", p, real, s.root)
	}
	return nil
}

func (s *dirStore) Open(ctx context.Context, key string) (Object, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	p := s.path(key)
	if err := s.outside(p); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
			return nil, notExist("open", p)
		}
		return nil, fmt.Errorf("storage: open %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: open %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notExist("open", p)
	}
	return &dirObject{File: f, size: fi.Size()}, nil
}

// dirObject is an open file; Size is its length when opened.
type dirObject struct {
	*os.File
	size int64
}

func (o *dirObject) Size() int64 { return o.size }

func (s *dirStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := s.check(ctx, key); err != nil {
		return Info{}, err
	}
	p := s.path(key)
	if err := s.outside(p); err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
			return Info{}, notExist("stat", p)
		}
		return Info{}, fmt.Errorf("storage: stat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, notExist("stat", p)
	}
	return fileInfo(key, fi), nil
}

func fileInfo(key string, fi fs.FileInfo) Info {
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), ETag: fileETag(fi)}
}

func (s *dirStore) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", s.root, err)
	}
	// Walk the deepest directory the prefix names completely; filter the rest by string.
	start := s.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = s.path(prefix[:i])
	}
	var out []Info
	start = walkRoot(start)
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir)) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			// A directory whose keys cannot start with prefix is not walked: a
			// dataset's listing beside a large tree (its parent, a home directory)
			// read all of it.
			if rel, err := filepath.Rel(s.root, p); err == nil && rel != "." {
				if k := filepath.ToSlash(rel) + "/"; !strings.HasPrefix(k, prefix) && !strings.HasPrefix(prefix, k) {
					return fs.SkipDir
				}
			}
			return nil
		}
		if reservedName(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || CheckKey(key) != nil {
			return nil
		}
		fi, err := os.Stat(p) // follows symlinks
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile, or a dangling symlink
			}
			return err
		}
		if fi.Mode().IsRegular() {
			out = append(out, fileInfo(key, fi))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list %s prefix %q: %w", s.root, prefix, err)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (s *dirStore) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	p := s.path(key)
	dir := filepath.Dir(p)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
			return nil
		}
		return fmt.Errorf("storage: delete %s: %w", p, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("storage: delete %s: %w", p, err)
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
		err = fs.ErrNotExist // a directory is no object: nothing to delete
	} else {
		err = os.Remove(p)
	}
	unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: delete %s: %w", p, err)
	}
	if err == nil {
		if err := durable.SyncDir(dir); err != nil {
			return fmt.Errorf("storage: delete %s: %w", p, err)
		}
	}
	return nil
}

func (s *dirStore) check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("storage: %s: %w", s.root, err)
	}
	return nil
}

// sweep removes temp files older than cutoff (left by crashed writers) of keys starting
// with prefix.
func (s *dirStore) sweep(ctx context.Context, prefix string, cutoff time.Time) (int, error) {
	n := 0
	start := s.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = s.path(prefix[:i])
	}
	err := filepath.WalkDir(walkRoot(start), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !isTempName(d.Name()) {
			return nil
		}
		if !strings.HasPrefix(tempKey(s.root, p), prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if removeAbandoned(p) { // else its writer lives: it holds the temp file's lock
			s.log.Debug("storage: swept temp file", "path", p)
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("storage: sweep %s: %w", s.root, err)
	}
	return n, nil
}

// walkRoot is dir with a trailing separator, so that filepath.WalkDir descends into
// it when it is a symlink to a directory (a dataset directory linked to another
// disk); without it the walk reports the link itself and lists nothing under it.
func walkRoot(dir string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir
	}
	return dir + string(filepath.Separator)
}

// tempKey is the key a temp file at p would have been committed under.
func tempKey(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return ""
	}
	dir, name := path.Split(filepath.ToSlash(rel))
	return dir + strings.TrimPrefix(name[:strings.LastIndex(name, tempMarker)], ".")
}

var _ io.ReaderAt = (*dirObject)(nil)
