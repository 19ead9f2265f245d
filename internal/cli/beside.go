package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// StoreTokenizerBeside stores in st, beside a dataset, the tokenizer files that its
// readers (shards cat --decode, train sample, train export: spec.ForDataset) find the
// tokenizer by when no built-in name loads it: chars.json for a character vocabulary;
// the tokenizer.json, the vocab.json and merges.txt, or the .tiktoken rank file
// (ENCODING.tiktoken: a vocabulary of its own has the built-in encoding's name but not
// its fingerprint) of a tokenizer loaded from a local file or directory (specString).
// A built-in name, a download (a URL, a Hugging Face id) or a copy of a built-in
// encoding's rank file (its fingerprint) stores nothing: readers load a built-in by
// name. The other tokenizer files already in st (an earlier dataset's, which
// --overwrite replaced) are removed once the new ones are written (where nothing is
// stored, all of them: a stale file that no longer loads would stop the readers before
// they try the name), except the files the tokenizer is read from (--tokenizer naming
// a file in the data's own directory) and a copy of a built-in encoding's rank file,
// which this function never stores (a user's own). A key that already holds the same
// bytes is left as it is. It returns the keys it created or changed, which a caller
// that fails afterwards removes (never the user's file it was given).
func StoreTokenizerBeside(ctx context.Context, st storage.Store, specString string, tok *tokenize.Tokenizer) ([]string, error) {
	files := map[string]func() ([]byte, error){} // key in st -> its content
	switch {
	case tok.Kind() == tokenize.KindChar:
		files["chars.json"] = func() ([]byte, error) {
			data, err := tok.MarshalChars()
			return append(data, '\n'), err
		}
	case tok.Kind() == tokenize.KindBPE:
		fi, err := os.Stat(specString)
		if err != nil { // a name, a URL, a Hugging Face id
			break
		}
		read := func(path string) func() ([]byte, error) { return func() ([]byte, error) { return os.ReadFile(path) } }
		has := func(path string) bool { fi, err := os.Stat(path); return err == nil && fi.Mode().IsRegular() }
		dir, base := specString, ""
		if !fi.IsDir() {
			dir, base = filepath.Dir(specString), filepath.Base(specString)
		}
		switch {
		case strings.HasSuffix(base, ".tiktoken"): // its name tells the encoding
			// The built-in encoding of that name (its fingerprint: a copy of
			// cl100k_base.tiktoken) is loaded by the manifest's name: 1.6-3.6 MB
			// beside every dataset for nothing. A vocabulary of its own is kept.
			builtin, err := spec.LoadName(ctx, strings.TrimSuffix(base, ".tiktoken"), spec.Options{})
			if err == nil && builtin.Fingerprint() == tok.Fingerprint() {
				break
			}
			files[base] = read(specString)
		case base == "vocab.json" || base == "merges.txt" || (base == "" && !has(filepath.Join(dir, "tokenizer.json")) && has(filepath.Join(dir, "vocab.json"))):
			// As spec.Load reads them: the pair, side by side.
			files["vocab.json"] = read(filepath.Join(dir, "vocab.json"))
			files["merges.txt"] = read(filepath.Join(dir, "merges.txt"))
		case base == "":
			files["tokenizer.json"] = read(filepath.Join(dir, "tokenizer.json"))
		default: // a tokenizer.json by any name
			files["tokenizer.json"] = read(specString)
		}
	default: // GPT-NeoX's byte tokenizer: the name char loads it
	}
	var wrote, kept []string
	for _, key := range spec.DatasetFiles {
		content, ok := files[key]
		if !ok {
			continue
		}
		data, err := content()
		if err != nil {
			return wrote, fmt.Errorf("store the tokenizer beside the data: %w", err)
		}
		if sameFile(st, key, specString) || holds(ctx, st, key, data) { // (the very file --tokenizer named, or a rerun's)
			kept = append(kept, key)
			continue
		}
		if err := PutFile(ctx, st, key, data); err != nil {
			return wrote, fmt.Errorf("store the tokenizer beside the data: %s: %w", key, err)
		}
		wrote = append(wrote, key)
	}
	// Those readers try first would be found instead; the others would travel with
	// the data (shards merge, cat from S3) as if they were its tokenizer.
	for _, key := range spec.DatasetFiles {
		if slices.Contains(wrote, key) || slices.Contains(kept, key) || isSource(st, key, specString) || builtinCopy(ctx, st, key) {
			continue
		}
		if err := st.Delete(ctx, key); err != nil && !errors.Is(err, storage.ErrNotExist) {
			return wrote, fmt.Errorf("remove the earlier tokenizer file %s beside the data: %w", key, err)
		}
	}
	return wrote, nil
}

// holds reports whether key of st holds exactly data.
func holds(ctx context.Context, st storage.Store, key string, data []byte) bool {
	info, err := st.Stat(ctx, key)
	if err != nil || info.Size != int64(len(data)) {
		return false
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return false
	}
	defer obj.Close()
	got, err := io.ReadAll(io.LimitReader(obj, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// sameFile reports whether key of st is the local file specString.
func sameFile(st storage.Store, key, specString string) bool {
	path, ok := st.LocalPath(key)
	if !ok {
		return false
	}
	a, err1 := os.Stat(path)
	b, err2 := os.Stat(specString)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// isSource reports whether key of st is, or lies in the directory of, the local
// tokenizer file or directory specString: the user's own files, which the tokenizer
// was read from, whatever they are named.
func isSource(st storage.Store, key, specString string) bool {
	path, ok := st.LocalPath(key)
	if !ok {
		return false
	}
	fi, err := os.Stat(specString)
	if err != nil {
		return false
	}
	dir := specString
	if !fi.IsDir() {
		dir = filepath.Dir(specString)
	}
	// The same directory however it is named (a symbolic link, a relative path).
	a, err1 := os.Stat(filepath.Dir(path))
	b, err2 := os.Stat(dir)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// builtinCopy reports whether key of st is a .tiktoken rank file with the fingerprint
// of the built-in encoding it is named after (the publisher's file): never stored by
// StoreTokenizerBeside, so a user's, and harmless to readers (spec.ForDataset tries the
// manifest's name after it).
func builtinCopy(ctx context.Context, st storage.Store, key string) bool {
	enc, ok := strings.CutSuffix(key, ".tiktoken")
	if !ok {
		return false
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(obj, 64<<20))
	obj.Close()
	if err != nil {
		return false
	}
	builtin, err := spec.LoadName(ctx, enc, spec.Options{})
	if err != nil {
		return false
	}
	tok, err := tokenize.LoadTiktoken(data, enc)
	return err == nil && tok.Fingerprint() == builtin.Fingerprint()
}

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
