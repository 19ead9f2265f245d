package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"gptkit/storage"
)

// s3Backend keeps checkpoints under an S3 prefix (any storage.Store without directory
// renames): files first, checkpoint.json last.
type s3Backend struct {
	st   storage.Store
	root string // s3://bucket/prefix, for messages and returned directories
	log  *slog.Logger
}

func (b *s3Backend) location(name string) string { return b.root + "/" + name }

func (b *s3Backend) save(ctx context.Context, step int64, files []File) (string, error) {
	name := DirName(step)
	manifestKey := name + "/" + ManifestName
	// Replacing a checkpoint: unpublish it first, so that it is never complete with
	// files of two saves.
	if _, err := b.st.Stat(ctx, manifestKey); err == nil {
		b.log.Warn("checkpoint: replacing an existing checkpoint of the same step", "dir", b.location(name))
		if err := b.st.Delete(ctx, manifestKey); err != nil {
			return "", err
		}
	} else if !errors.Is(err, storage.ErrNotExist) {
		return "", err
	}
	man := &Manifest{Format: Format, Version: Version, Step: step, Time: time.Now().UTC().Format(time.RFC3339)}
	for _, f := range files {
		fi, err := b.put(ctx, name+"/"+f.Name, f.Name, f.Write)
		if err != nil {
			return "", err
		}
		man.Files = append(man.Files, fi)
		hook("file-written")
	}
	hook("before-manifest")
	manifest := man.marshal()
	hook("before-publish")
	if _, err := b.put(ctx, manifestKey, ManifestName, func(w io.Writer) error {
		_, err := w.Write(manifest)
		return err
	}, storage.IfAbsent()); err != nil {
		if errors.Is(err, storage.ErrPrecondition) {
			return "", fmt.Errorf("another writer published %s at the same time (one process may write a checkpoint root): %w", b.location(name), err)
		}
		return "", err
	}
	hook("published")
	return b.location(name), nil
}

// put writes one object through a hashing writer and commits it.
func (b *s3Backend) put(ctx context.Context, key, name string, write func(io.Writer) error, opts ...storage.WriteOption) (FileInfo, error) {
	w, err := b.st.Create(ctx, key, opts...)
	if err != nil {
		return FileInfo{}, err
	}
	defer w.Abort()
	fi, err := writeThrough(w, name, write)
	if err != nil {
		return FileInfo{}, fmt.Errorf("writing %s: %w", b.location(key), err)
	}
	if err := w.Commit(); err != nil {
		return FileInfo{}, err
	}
	return fi, nil
}

func (b *s3Backend) list(ctx context.Context) ([]candidate, []string, error) {
	infos, err := b.st.List(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	type group struct {
		step  int64
		sizes map[string]int64
	}
	groups := map[string]*group{}
	for _, in := range infos {
		dir, file, ok := strings.Cut(in.Key, "/")
		if !ok || strings.Contains(file, "/") {
			continue
		}
		step, ok := parseDirName(dir)
		if !ok {
			continue
		}
		g := groups[dir]
		if g == nil {
			g = &group{step: step, sizes: map[string]int64{}}
			groups[dir] = g
		}
		g.sizes[file] = in.Size
	}
	var cands []candidate
	for dir, g := range groups {
		_, hasManifest := g.sizes[ManifestName]
		cands = append(cands, candidate{
			Entry:       Entry{Dir: b.location(dir), Step: g.step},
			check:       func(ctx context.Context) (*Manifest, error) { return b.check(ctx, dir, g.step, g.sizes) },
			unpublished: !hasManifest,
		})
	}
	sortCandidates(cands)
	return cands, nil, nil
}

func (b *s3Backend) check(ctx context.Context, dir string, step int64, sizes map[string]int64) (*Manifest, error) {
	if _, ok := sizes[ManifestName]; !ok {
		return nil, fmt.Errorf("no %s (an interrupted upload, or not a checkpoint)", ManifestName)
	}
	man, err := b.readManifest(ctx, dir)
	if err != nil {
		return nil, err
	}
	if man.Step != step {
		return nil, fmt.Errorf("%s says step %d, its directory step %d", ManifestName, man.Step, step)
	}
	for _, f := range man.Files {
		size, ok := sizes[f.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s is missing", f.Name)
		case size != f.Size:
			return nil, fmt.Errorf("%s has %d bytes, %s lists %d", f.Name, size, ManifestName, f.Size)
		}
	}
	return man, nil
}

func (b *s3Backend) readManifest(ctx context.Context, dir string) (*Manifest, error) {
	hook("read-manifest")
	o, err := b.st.Open(ctx, dir+"/"+ManifestName)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("no %s (an interrupted upload, or not a checkpoint)", ManifestName)
	}
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return parseManifestFrom(o, b.location(dir)+"/"+ManifestName)
}

func (b *s3Backend) open(ctx context.Context, dir, name string) (io.ReadCloser, int64, error) {
	o, err := b.st.Open(ctx, dir+"/"+name)
	if err != nil {
		return nil, 0, err
	}
	return o, o.Size(), nil
}

// remove deletes a checkpoint, checkpoint.json first so that it is never seen partial.
func (b *s3Backend) remove(ctx context.Context, dir string) error {
	if err := b.st.Delete(ctx, dir+"/"+ManifestName); err != nil {
		return err
	}
	hook("prune-renamed")
	infos, err := b.st.List(ctx, dir+"/")
	if err != nil {
		return err
	}
	for _, in := range infos {
		if err := b.st.Delete(ctx, in.Key); err != nil {
			return err
		}
	}
	return nil
}

func (b *s3Backend) removeStale(context.Context, string) error { return nil }
