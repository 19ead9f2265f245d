package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize/spec"
)

// PutFile writes data to key of st, committed only when complete.
func PutFile(ctx context.Context, st storage.Store, key string, data []byte) error {
	w, err := st.Create(ctx, key)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Commit()
}

// FetchTokenizerBeside copies the tokenizer files stored beside the dataset at loc (an
// s3:// location: spec.DatasetFiles, as StoreTokenizerBeside writes them) into a new
// temporary directory, where spec.ForDataset, which reads local files, finds them;
// cleanup removes it. dir is "" when there are none; from is where they were (loc, or
// its run's directory), for messages. A part of a partitioned run
// (DIR/parts/part-00000-of-00004: shards.PartParent) without files of its own takes
// DIR's, where tokenize run keeps them once for all its parts (as shards cat --decode
// finds them). A store that cannot be reached or a file that cannot be read is taken as
// absent, with a warning on log: the tokenizer the manifest names is tried next.
func FetchTokenizerBeside(ctx context.Context, loc string, opt storage.Options, log *slog.Logger) (dir, from string, cleanup func(), err error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	open := func(ctx context.Context, loc string) (storage.Store, error) { return storage.Open(ctx, loc, opt) }
	st, err := open(ctx, loc)
	if err != nil {
		log.Warn("cannot look for the tokenizer files beside the data", "data", loc, "err", err)
		return "", loc, func() {}, nil
	}
	return tokenizerBeside(ctx, st, loc, open, log)
}

// TokenizerBeside is FetchTokenizerBeside for the dataset in st, its parts' run
// directory opened with open (nil: a part's run directory is not looked at), except that
// a local store's files are read where they are: dir is the dataset's directory (even
// when it holds none: spec.ForDataset then tries the name), or a part's run directory
// that holds them; cleanup removes nothing.
func TokenizerBeside(ctx context.Context, st storage.Store, open func(context.Context, string) (storage.Store, error), log *slog.Logger) (dir, from string, cleanup func(), err error) {
	return tokenizerBeside(ctx, st, st.String(), open, log)
}

// tokenizerBeside is TokenizerBeside, naming st loc.
func tokenizerBeside(ctx context.Context, st storage.Store, loc string, open func(context.Context, string) (storage.Store, error), log *slog.Logger) (dir, from string, cleanup func(), err error) {
	if p, ok := st.LocalPath(shards.ManifestName); ok {
		dir = filepath.Dir(p)
		if !hasDatasetFiles(dir) {
			if parent, ok := shards.PartParent(filepath.ToSlash(dir)); ok && hasDatasetFiles(filepath.FromSlash(parent)) {
				dir = filepath.FromSlash(parent)
			}
		}
		return dir, dir, func() {}, nil
	}
	dir, cleanup, err = fetchTokenizerFiles(ctx, st, loc, log)
	if err != nil || dir != "" {
		return dir, loc, cleanup, err
	}
	parent, ok := shards.PartParent(loc)
	if !ok || open == nil {
		return dir, loc, cleanup, nil
	}
	pst, err := open(ctx, parent)
	if err != nil {
		log.Warn("cannot look for the tokenizer files beside the data", "data", parent, "err", err)
		return "", loc, cleanup, nil
	}
	dir, cleanup, err = fetchTokenizerFiles(ctx, pst, parent, log)
	return dir, parent, cleanup, err
}

// NamedBeside is err with dir, the temporary copy of the tokenizer files that
// FetchTokenizerBeside or TokenizerBeside made, replaced by from, where the files are
// (an s3:// location): a message that names the copy names a path that is gone once
// the command ends. err as it is when the files were read in place (dir is from).
func NamedBeside(err error, dir, from string) error {
	if err == nil || dir == "" || from == "" || dir == from || !strings.Contains(err.Error(), dir) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), dir, strings.TrimSuffix(from, "/")))
}

// hasDatasetFiles reports whether the local directory dir holds one of spec.DatasetFiles.
func hasDatasetFiles(dir string) bool {
	for _, name := range spec.DatasetFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// fetchTokenizerFiles copies the tokenizer files in st (named loc) into a new temporary
// directory ("" when there are none), which cleanup removes (on an error, already removed).
func fetchTokenizerFiles(ctx context.Context, st storage.Store, loc string, log *slog.Logger) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	for _, name := range spec.DatasetFiles {
		data, err := readAll(ctx, st, name)
		if errors.Is(err, storage.ErrNotExist) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				cleanup()
				return "", func() {}, ctx.Err()
			}
			log.Warn("cannot read the tokenizer file beside the data", "data", loc, "file", name, "err", err)
			continue
		}
		if dir == "" {
			if dir, err = os.MkdirTemp("", "gptkit-tokenizer-"); err != nil {
				return "", cleanup, fmt.Errorf("copy the tokenizer files beside %s: %w", loc, err)
			}
			cleanup = func() { os.RemoveAll(dir) }
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			cleanup()
			return "", func() {}, fmt.Errorf("copy the tokenizer file %s beside %s: %w", name, loc, err)
		}
	}
	return dir, cleanup, nil
}

// readAll is the content of key in st.
func readAll(ctx context.Context, st storage.Store, key string) ([]byte, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}
