package cli

import (
	"bytes"
	"context"
	"encoding/base64"
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

// TokenizerFilesKey is the key of a manifest's source that lists the tokenizer files
// the command that made the dataset stored beside it (TokenizerPlan.Keys): the only
// files a later command removes or replaces there without asking.
const TokenizerFilesKey = shards.SourceTokenizerFiles

// TokenizerPlan is what storing a tokenizer beside a dataset does in st, decided
// before anything is written (PlanTokenizerBeside), so that a command can refuse
// before its work and record the files in the manifest it writes.
type TokenizerPlan struct {
	st     storage.Store
	write  []besideFile // to write, in spec.DatasetFiles' order
	keys   []string     // the keys that hold this tokenizer's files once stored, ours
	remove []string     // an earlier dataset's files that this one's do not replace
}

type besideFile struct {
	key  string
	data []byte
}

// PlanTokenizerBeside plans the storing, in st beside a dataset, of the tokenizer
// files that its readers (shards cat --decode, train sample, train export:
// spec.ForDataset) find the tokenizer by when no built-in name loads it: chars.json
// for a character vocabulary; the tokenizer.json, the vocab.json and merges.txt, or
// the .tiktoken rank file (ENCODING.tiktoken: a vocabulary of its own has the
// built-in encoding's name but not its fingerprint) of a tokenizer loaded from a local
// file or directory (specString); for a download (a URL, a Hugging Face id, a
// built-in name from --tokenizer-url), a tokenizer.json or rank file written from tok
// (writeTokenizer), as the cache it came into is not the readers'. A built-in name, or
// a copy of a built-in's files (spec.IsBuiltin: spec.Load gives the built-in), stores
// nothing: readers load a built-in by name.
//
// Only files a gptkit command stored are ever replaced or removed: those that prev
// (the manifest st held before this command, nil for none) lists under
// TokenizerFilesKey. A file of that name that holds the same bytes, or that is the
// very file the tokenizer is read from, is left as it is (and listed where prev lists it:
// --tokenizer DIR/tokenizer.json that an earlier run stored stays the dataset's); any other file there (a
// user's own, or one stored by a gptkit that kept no list) is refused, naming it,
// before anything is written. An earlier dataset's listed files that the new ones do
// not replace are removed (readers skip a file of another fingerprint, but it would
// travel with the data), except the files the tokenizer is read from.
//
// A downloaded tokenizer that no file written from it gives back (writeTokenizer) is
// not stored: log (nil: none) warns, naming it, and the command goes on; decoding its
// data then needs --tokenizer again.
func PlanTokenizerBeside(ctx context.Context, st storage.Store, specString string, tok *tokenize.Tokenizer, prev *shards.Manifest, log *slog.Logger) (*TokenizerPlan, error) {
	files, err := tokenizerFiles(ctx, specString, tok)
	if ne := (*noCopyError)(nil); errors.As(err, &ne) {
		if log != nil {
			log.Warn("the tokenizer is not stored beside the data: no file written from it gives it back; decoding the data (shards cat --decode, train sample, train export) needs --tokenizer "+specString+" again",
				"tokenizer", specString, "name", tok.Name(), "problem", ne.err)
		}
		files, err = map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store the tokenizer beside the data: %w", err)
	}
	ours := recordedTokenizerFiles(prev)
	p := &TokenizerPlan{st: st}
	for _, key := range spec.DatasetFiles {
		data, ok := files[key]
		if !ok {
			continue
		}
		switch {
		case sameFile(st, key, specString) && !slices.Contains(ours, key): // the user's: not ours to list
		case holds(ctx, st, key, data):
			p.keys = append(p.keys, key)
		default:
			if _, err := st.Stat(ctx, key); err == nil && !slices.Contains(ours, key) {
				return nil, fmt.Errorf("store the tokenizer beside the data: %s is there already and holds another tokenizer file, which no gptkit command recorded storing (a file of yours?): move it away, or choose another output directory", keyPath(st, key))
			} else if err != nil && !errors.Is(err, storage.ErrNotExist) {
				return nil, fmt.Errorf("store the tokenizer beside the data: %s: %w", keyPath(st, key), err)
			}
			p.write = append(p.write, besideFile{key, data})
			p.keys = append(p.keys, key)
		}
	}
	for _, key := range ours {
		if !slices.Contains(spec.DatasetFiles, key) || files[key] != nil || isSource(st, key, specString) {
			continue
		}
		p.remove = append(p.remove, key)
	}
	return p, nil
}

// Keys are the tokenizer files beside the dataset once stored that a gptkit command
// put there: what its manifest records under TokenizerFilesKey.
func (p *TokenizerPlan) Keys() []string { return p.keys }

// Store writes the planned files and removes an earlier dataset's that they do not
// replace. It returns the keys it created or changed, which a caller that fails
// afterwards removes (never a file it was given).
func (p *TokenizerPlan) Store(ctx context.Context) ([]string, error) {
	var wrote []string
	for _, f := range p.write {
		if err := PutFile(ctx, p.st, f.key, f.data); err != nil {
			return wrote, fmt.Errorf("store the tokenizer beside the data: %s: %w", f.key, err)
		}
		wrote = append(wrote, f.key)
	}
	for _, key := range p.remove {
		if err := p.st.Delete(ctx, key); err != nil && !errors.Is(err, storage.ErrNotExist) {
			return wrote, fmt.Errorf("remove the earlier tokenizer file %s beside the data: %w", key, err)
		}
	}
	return wrote, nil
}

// StoreTokenizerBeside is PlanTokenizerBeside, then Store: it returns the keys to
// record and those it created or changed.
func StoreTokenizerBeside(ctx context.Context, st storage.Store, specString string, tok *tokenize.Tokenizer, prev *shards.Manifest, log *slog.Logger) (keys, wrote []string, err error) {
	p, err := PlanTokenizerBeside(ctx, st, specString, tok, prev, log)
	if err != nil {
		return nil, nil, err
	}
	wrote, err = p.Store(ctx)
	return p.Keys(), wrote, err
}

// PreviousManifest is the manifest st holds at its root, or nil where it holds none
// or one that does not read (the command's own checks say why).
func PreviousManifest(ctx context.Context, st storage.Store) *shards.Manifest {
	m, err := shards.ReadManifest(ctx, st, "")
	if err != nil {
		return nil
	}
	return m
}

// recordedTokenizerFiles are the keys m's source lists under TokenizerFilesKey.
func recordedTokenizerFiles(m *shards.Manifest) []string {
	if m == nil {
		return nil
	}
	var keys []string
	switch list := m.Source[TokenizerFilesKey].(type) {
	case []any: // as read back from JSON
		for _, k := range list {
			if s, ok := k.(string); ok {
				keys = append(keys, s)
			}
		}
	case []string:
		keys = list
	}
	return keys
}

// tokenizerFiles are the files to store for tok, by key.
func tokenizerFiles(ctx context.Context, specString string, tok *tokenize.Tokenizer) (map[string][]byte, error) {
	files := map[string][]byte{}
	switch tok.Kind() {
	case tokenize.KindChar:
		data, err := tok.MarshalChars()
		if err != nil {
			return nil, err
		}
		files["chars.json"] = append(data, '\n')
	case tokenize.KindBPE:
		if spec.IsBuiltin(tok) {
			// A copy of a built-in's files (spec.Load gives the built-in: its name,
			// its fingerprint), which readers load by the manifest's name: 1.6-3.6 MB
			// beside every dataset for nothing.
			return files, nil
		}
		fi, err := os.Stat(specString)
		if err != nil { // a URL, a Hugging Face id, a name downloaded from elsewhere
			key, data, err := writeTokenizer(tok)
			if err != nil {
				return nil, err
			}
			files[key] = data
			return files, nil
		}
		has := func(path string) bool { fi, err := os.Stat(path); return err == nil && fi.Mode().IsRegular() }
		dir, base := specString, ""
		if !fi.IsDir() {
			dir, base = filepath.Dir(specString), filepath.Base(specString)
		}
		from := map[string]string{} // key -> the file it is read from
		switch {
		case strings.HasSuffix(base, ".tiktoken"): // its name tells the encoding
			from[base] = specString
		case base == "vocab.json" || base == "merges.txt" || (base == "" && !has(filepath.Join(dir, "tokenizer.json")) && has(filepath.Join(dir, "vocab.json"))):
			// As spec.Load reads them: the pair, side by side.
			from["vocab.json"] = filepath.Join(dir, "vocab.json")
			from["merges.txt"] = filepath.Join(dir, "merges.txt")
		case base == "":
			from["tokenizer.json"] = filepath.Join(dir, "tokenizer.json")
		default: // a tokenizer.json by any name
			from["tokenizer.json"] = specString
		}
		for key, path := range from {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			files[key] = data
		}
	default: // GPT-NeoX's byte tokenizer: the name char loads it
	}
	return files, nil
}

// writeTokenizer is a file that gives tok back (its fingerprint), for a tokenizer
// downloaded into a cache of the machine that made the dataset: the .tiktoken rank
// file of its encoding where tok is one (what a .tiktoken URL downloads), else its
// tokenizer.json (tokenize.WriteHFJSON: a Hugging Face id's, a URL's, a built-in
// name's downloaded from --tokenizer-url with another fingerprint).
func writeTokenizer(tok *tokenize.Tokenizer) (key string, data []byte, err error) {
	if slices.Contains(tokenize.TiktokenEncodings(), tok.Name()) {
		data := rankFile(tok)
		if back, err := tokenize.LoadTiktoken(data, tok.Name()); err == nil && back.Fingerprint() == tok.Fingerprint() {
			return tok.Name() + ".tiktoken", data, nil
		}
	}
	var buf bytes.Buffer
	if err := writeHFJSON(tok, &buf); err != nil {
		return "", nil, &noCopyError{err}
	}
	back, err := tokenize.LoadHFJSON(buf.Bytes(), tok.Name())
	if err == nil && back.Fingerprint() != tok.Fingerprint() {
		err = fmt.Errorf("fingerprint %.12s, not %.12s", back.Fingerprint(), tok.Fingerprint())
	}
	if err != nil {
		return "", nil, &noCopyError{fmt.Errorf("the tokenizer.json written for %s does not give it back: %w", tok.Name(), err)}
	}
	return "tokenizer.json", buf.Bytes(), nil
}

// writeHFJSON writes tok's tokenizer.json (tests give one that does not give tok back).
var writeHFJSON = func(tok *tokenize.Tokenizer, w io.Writer) error { return tok.WriteHFJSON(w) }

// noCopyError is writeTokenizer's error where no file gives the tokenizer back: not a
// storage failure, so nothing is stored and the command goes on (PlanTokenizerBeside).
type noCopyError struct{ err error }

func (e *noCopyError) Error() string { return e.err.Error() }
func (e *noCopyError) Unwrap() error { return e.err }

// rankFile is tok's vocabulary as a .tiktoken rank file: each token that is not an
// added one (the encoding's specials), base64, and its id as its rank.
func rankFile(tok *tokenize.Tokenizer) []byte {
	added := map[int]bool{}
	for _, a := range tok.AddedTokens() {
		added[a.ID] = true
	}
	var b bytes.Buffer
	for id := range tok.VocabSize() {
		if t := tok.TokenBytes(id); t != nil && !added[id] {
			fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString(t), id)
		}
	}
	return b.Bytes()
}

// keyPath names key of st for messages.
func keyPath(st storage.Store, key string) string {
	if path, ok := st.LocalPath(key); ok {
		return path
	}
	return strings.TrimSuffix(st.String(), "/") + "/" + key
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

// WithTokenizerFiles is a manifest's source with keys, the tokenizer files stored
// beside its dataset (TokenizerPlan.Keys), listed under TokenizerFilesKey (nothing
// where there are none).
func WithTokenizerFiles(source map[string]any, keys []string) map[string]any {
	if len(keys) > 0 {
		if source == nil {
			source = map[string]any{}
		}
		source[TokenizerFilesKey] = keys
	}
	return source
}
