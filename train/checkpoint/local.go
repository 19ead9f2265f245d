package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gptkit/internal/durable"
)

// errNoRoot reports a local root that does not exist (when reading).
var errNoRoot = errors.New("no such directory")

// tmpPrefix starts the names of directories being written or removed; Latest ignores
// them and prune deletes them.
const tmpPrefix = ".tmp-"

// maxManifestSize bounds what is read as checkpoint.json.
const maxManifestSize = 16 << 20

// localBackend keeps checkpoints in a directory.
type localBackend struct {
	root string
	log  *slog.Logger
}

func newLocal(root string, create bool, log *slog.Logger) (*localBackend, error) {
	if root == "" {
		return nil, errors.New("empty checkpoint root (pass a directory or s3://bucket/prefix)")
	}
	if create {
		if err := MkdirAll(root); err != nil {
			return nil, fmt.Errorf("%w (check the path and its permissions)", err)
		}
	} else if fi, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoRoot
	} else if err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	return &localBackend{root: root, log: log}, nil
}

func (b *localBackend) location(name string) string { return filepath.Join(b.root, name) }

func randomSuffix() string {
	var r [6]byte
	rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

func (b *localBackend) save(ctx context.Context, step int64, files []File) (string, error) {
	name := DirName(step)
	tmp, err := os.MkdirTemp(b.root, tmpPrefix+name+"-")
	if err != nil {
		return "", err
	}
	published := false
	defer func() {
		if !published {
			os.RemoveAll(tmp)
		}
	}()
	man := &Manifest{Format: Format, Version: Version, Step: step, Time: time.Now().UTC().Format(time.RFC3339)}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		fi, err := writeLocalFile(filepath.Join(tmp, f.Name), f.Name, f.Write)
		if err != nil {
			return "", err
		}
		man.Files = append(man.Files, fi)
		hook("file-written")
	}
	hook("before-manifest")
	manifest := man.marshal()
	if _, err := writeLocalFile(filepath.Join(tmp, ManifestName), ManifestName, func(w io.Writer) error {
		_, err := w.Write(manifest)
		return err
	}); err != nil {
		return "", err
	}
	if err := syncDir(tmp); err != nil {
		return "", err
	}
	hook("before-publish")
	dst := filepath.Join(b.root, name)
	var replaced string
	if _, err := os.Lstat(dst); err == nil {
		b.log.Warn("checkpoint: replacing an existing checkpoint of the same step", "dir", dst)
		// Swapped in one step where the file system can, there is no moment without a
		// complete checkpoint of the step: tmp then holds the old one (a .tmp- name,
		// which prune removes if this process dies first).
		swapped, err := exchange(tmp, dst)
		if err != nil {
			return "", fmt.Errorf("replacing %s: %w", dst, err)
		}
		if swapped {
			published = true
			hook("published")
			if err := syncDir(b.root); err != nil {
				return "", err
			}
			if err := os.RemoveAll(tmp); err != nil {
				return "", fmt.Errorf("removing the replaced checkpoint %s: %w", tmp, err)
			}
			return dst, nil
		}
		// Else in two renames: between them only the .tmp- names hold the step.
		replaced = filepath.Join(b.root, tmpPrefix+"replaced-"+name+"-"+randomSuffix())
		if err := os.Rename(dst, replaced); err != nil {
			return "", fmt.Errorf("moving the existing %s aside: %w", dst, err)
		}
		hook("replaced-aside")
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("publishing %s: %w", dst, err)
	}
	published = true
	hook("published")
	if err := syncDir(b.root); err != nil {
		return "", err
	}
	if replaced != "" {
		if err := os.RemoveAll(replaced); err != nil {
			return "", fmt.Errorf("removing the replaced checkpoint %s: %w", replaced, err)
		}
	}
	return dst, nil
}

// writeLocalFile creates path (which must not exist), writes it with write, fsyncs and
// closes it.
func writeLocalFile(path, name string, write func(io.Writer) error) (FileInfo, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := writeThrough(f, name, write)
	if err != nil {
		f.Close()
		return FileInfo{}, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return FileInfo{}, fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return FileInfo{}, fmt.Errorf("closing %s: %w", path, err)
	}
	return fi, nil
}

// MkdirAll makes dir and its missing parents (os.MkdirAll), durably: the parent of
// each directory it made is fsynced, so that a power loss after it returns cannot
// take the new directory's entry, and the checkpoints saved in it, with it (a first
// save's checkpoints directory was made without: the checkpoint's own fsyncs made
// its files and its entry in that directory durable, not the directory's in OUT).
func MkdirAll(dir string) error {
	var made []string // deepest first
	for d := filepath.Clean(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	for _, d := range made {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory, making the creations and renames in it durable (a
// variable: the tests see the calls).
var syncDir = SyncDir

// SyncDir fsyncs dir, making the creations and renames in it durable (a file
// system that cannot fsync a directory is not an error): durable.SyncDir.
func SyncDir(dir string) error { return durable.SyncDir(dir) }

func (b *localBackend) list(context.Context) ([]candidate, []string, error) {
	des, err := os.ReadDir(b.root)
	if err != nil {
		return nil, nil, err
	}
	var cands []candidate
	var stale []string
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			if de.IsDir() {
				stale = append(stale, name)
			}
			continue
		}
		step, ok := parseDirName(name)
		if !ok {
			continue
		}
		e := Entry{Dir: b.location(name), Step: step}
		if !de.IsDir() {
			// A link to a checkpoint moved to another disk is one too (it was
			// passed over without a word: resume auto went back to an older one).
			if de.Type()&fs.ModeSymlink == 0 {
				continue
			}
			fi, err := os.Stat(filepath.Join(b.root, name))
			switch {
			case err != nil:
				target, _ := os.Readlink(filepath.Join(b.root, name))
				e.Problem = fmt.Sprintf("a link to %s, which cannot be read (%v)", target, err)
			case !fi.IsDir():
				continue
			}
		}
		cands = append(cands, candidate{Entry: e, check: func(ctx context.Context) (*Manifest, error) { return b.check(ctx, name, step) }})
	}
	sortCandidates(cands)
	return cands, stale, nil
}

// check reads the checkpoint.json of the checkpoint in name and returns it, or why
// the checkpoint is not complete.
func (b *localBackend) check(ctx context.Context, name string, step int64) (*Manifest, error) {
	man, err := b.readManifest(ctx, name)
	if err != nil {
		return nil, err
	}
	if man.Step != step {
		return nil, fmt.Errorf("%s says step %d, its directory step %d", ManifestName, man.Step, step)
	}
	for _, f := range man.Files {
		fi, err := os.Lstat(filepath.Join(b.root, name, f.Name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s is missing", f.Name)
		case err != nil:
			return nil, err
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s is not a regular file", f.Name)
		case fi.Size() != f.Size:
			return nil, fmt.Errorf("%s has %d bytes, %s lists %d", f.Name, fi.Size(), ManifestName, f.Size)
		}
	}
	return man, nil
}

func (b *localBackend) readManifest(_ context.Context, name string) (*Manifest, error) {
	hook("read-manifest")
	path := filepath.Join(b.root, name, ManifestName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(b.root, name)); errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no such checkpoint directory")
		}
		return nil, fmt.Errorf("no %s (an interrupted save, or not a checkpoint)", ManifestName)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseManifestFrom(f, path)
}

// parseManifestFrom reads at most maxManifestSize bytes of checkpoint.json from r.
func parseManifestFrom(r io.Reader, where string) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", where, err)
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("%s: %w: over %d bytes", where, ErrCorrupt, maxManifestSize)
	}
	man, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", where, ErrCorrupt, err)
	}
	return man, nil
}

func (b *localBackend) open(_ context.Context, dirName, name string) (io.ReadCloser, int64, error) {
	f, err := os.Open(filepath.Join(b.root, dirName, name))
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// remove deletes a checkpoint: renamed aside first, so that a crash midway leaves a
// .tmp-* directory rather than a partial checkpoint.
func (b *localBackend) remove(_ context.Context, name string) error {
	aside := filepath.Join(b.root, tmpPrefix+"delete-"+name+"-"+randomSuffix())
	if err := os.Rename(filepath.Join(b.root, name), aside); err != nil {
		return err
	}
	if err := syncDir(b.root); err != nil {
		return err
	}
	hook("prune-renamed")
	return os.RemoveAll(aside)
}

// leftovers lists the .tmp-* directories of interrupted saves.
func (b *localBackend) leftovers() ([]string, error) {
	des, err := os.ReadDir(b.root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), tmpPrefix) && de.IsDir() {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

func (b *localBackend) removeStale(_ context.Context, name string) error {
	return os.RemoveAll(filepath.Join(b.root, name))
}
