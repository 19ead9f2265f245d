package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gptkit/shards"
	"gptkit/storage"
)

// target is what info, verify and cat read: a dataset (the manifest's directory is the
// store's root) or a bare GPT-NeoX shard without a manifest.
type target struct {
	store  storage.Store
	prefix string // the bare shard's key without .bin/.idx; "" for a dataset
}

// bare reports whether the target is a shard without a manifest.
func (t target) bare() bool { return t.prefix != "" }

// String names the target in messages: the dataset directory or the shard prefix.
func (t target) String() string {
	if t.bare() {
		return strings.TrimSuffix(t.store.String(), "/") + "/" + t.prefix
	}
	return t.store.String()
}

// openTarget resolves location: a dataset directory (local or s3://), or a shard prefix
// (PREFIX, PREFIX.idx or PREFIX.bin) when no dataset is there. A local location must
// exist: reading never creates directories.
func (sf *storageFlags) openTarget(ctx context.Context, location string) (target, error) {
	loc, bare := strings.CutSuffix(location, ".idx")
	if !bare {
		loc, bare = strings.CutSuffix(location, ".bin")
	}
	if strings.HasPrefix(loc, "s3://") {
		return sf.openS3Target(ctx, loc, bare)
	}
	loc = strings.TrimPrefix(loc, "file://")
	if !bare {
		fi, err := os.Stat(loc)
		switch {
		case err == nil && fi.IsDir():
			st, err := sf.open(ctx, loc)
			return target{store: st}, err
		case fileExists(loc + ".idx"):
			bare = true
		case err == nil:
			return target{}, fmt.Errorf("%s is a file; want a dataset directory (holding %s) or a shard PREFIX (PREFIX.idx + PREFIX.bin)", loc, shards.ManifestName)
		default:
			return target{}, fmt.Errorf("%s: no such dataset directory, and no shard %s.idx either", loc, loc)
		}
	}
	if !fileExists(loc + ".idx") {
		return target{}, fmt.Errorf("%s.idx: no such file (a GPT-NeoX shard is PREFIX.idx + PREFIX.bin)", loc)
	}
	st, err := sf.open(ctx, filepath.Dir(loc))
	return target{store: st, prefix: filepath.Base(loc)}, err
}

// openS3Target is openTarget for s3:// locations: a prefix holding manifest.json is a
// dataset; otherwise, if location.idx exists, a bare shard.
func (sf *storageFlags) openS3Target(ctx context.Context, loc string, bare bool) (target, error) {
	parent, base := path.Split(strings.TrimSuffix(loc, "/"))
	canBeShard := base != "" && strings.Count(parent, "/") >= 3 // s3://bucket/...
	var dataset storage.Store
	if !bare {
		st, err := sf.open(ctx, loc)
		if err != nil {
			return target{}, err
		}
		_, err = st.Stat(ctx, shards.ManifestName)
		if err == nil || !errors.Is(err, storage.ErrNotExist) || !canBeShard {
			return target{store: st}, nil // a missing manifest is reported by the command
		}
		dataset = st
	}
	if !canBeShard {
		return target{}, fmt.Errorf("%s is a bucket, not a shard prefix", loc)
	}
	pst, err := sf.open(ctx, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return target{}, err
	}
	if _, err := pst.Stat(ctx, base+".idx"); err != nil {
		if dataset != nil {
			return target{store: dataset}, nil // no shard either: report the missing manifest
		}
		return target{}, fmt.Errorf("%s.idx: %w", loc, err)
	}
	return target{store: pst, prefix: base}, nil
}

// openDatasetStore opens a dataset directory to read: it must exist when local.
func (sf *storageFlags) openDatasetStore(ctx context.Context, location string) (storage.Store, error) {
	if local := strings.TrimPrefix(location, "file://"); !strings.Contains(local, "://") {
		fi, err := os.Stat(local)
		if err != nil || !fi.IsDir() {
			if p := strings.TrimSuffix(strings.TrimSuffix(local, ".idx"), ".bin"); fileExists(p + ".idx") {
				return nil, fmt.Errorf("%s is a bare GPT-NeoX shard (%s.idx + %s.bin, no %s), not a dataset directory: this command takes the directories prep and tokenize run write (info, verify and cat read bare shards)", local, p, p, shards.ManifestName)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: no such dataset directory", local)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory; want a dataset directory (holding %s)", local, shards.ManifestName)
		}
	}
	return sf.open(ctx, location)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// readIndex reads and validates a bare shard's .idx (small: 12 bytes per document).
func readIndex(ctx context.Context, t target, opts []shards.Option) (*shards.Index, error) {
	name := t.String() + ".idx"
	obj, err := t.store.Open(ctx, t.prefix+".idx")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer obj.Close()
	// The magic first: a file that is no index (the .bin in its place, gigabytes)
	// is not read into memory to be refused.
	head := make([]byte, min(obj.Size(), int64(len(shards.Magic))))
	if _, err := io.ReadFull(obj, head); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if string(head) != shards.Magic {
		ix, err := shards.ParseIndex(name, head, opts...)
		if err != nil {
			err = shards.SwappedHint(err, t.String(), readHead(ctx, t, ".bin", len(shards.Magic)))
		}
		return ix, err
	}
	data := make([]byte, obj.Size())
	copy(data, head)
	if _, err := io.ReadFull(obj, data[len(head):]); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return shards.ParseIndex(name, data, opts...)
}

// readHead returns the first n bytes of the target's file with suffix ext (fewer,
// or none, if it is shorter or unreadable): for a hint only.
func readHead(ctx context.Context, t target, ext string, n int) []byte {
	obj, err := t.store.Open(ctx, t.prefix+ext)
	if err != nil {
		return nil
	}
	defer obj.Close()
	head := make([]byte, min(obj.Size(), int64(n)))
	k, _ := io.ReadFull(obj, head)
	return head[:k]
}

// removeIfCreated returns a function that removes the local directory location again if it
// does not exist now (the caller is about to create it) and is still empty when called: a
// failed merge or convert leaves no empty output directory behind.
func removeIfCreated(location string) func() {
	local := strings.TrimPrefix(location, "file://")
	if strings.Contains(local, "://") {
		return func() {}
	}
	if _, err := os.Stat(local); err == nil {
		return func() {}
	}
	return func() {
		// The writer lock file stays after its Release (storage.LockDir), and the
		// commit lock after a file's Commit or Delete (a chars.json written and removed
		// again): a directory that holds nothing else is still the one this command made.
		des, err := os.ReadDir(local)
		if err != nil {
			return
		}
		for _, de := range des {
			if n := de.Name(); n != ".gptkit-writer.lock" && n != ".gptkit.lock" {
				return
			}
		}
		for _, de := range des {
			os.Remove(filepath.Join(local, de.Name()))
		}
		os.Remove(local) // refuses, harmlessly, unless empty
	}
}
