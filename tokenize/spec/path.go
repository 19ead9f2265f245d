package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/tokenize"
)

// Well-known file names inside a tokenizer directory.
const (
	hfFile     = "tokenizer.json"
	vocabFile  = "vocab.json"
	mergesFile = "merges.txt"
	charsFile  = "chars.json"

	tiktokenExt = ".tiktoken" // a tiktoken rank file, named after its encoding
)

// loadPath loads the tokenizer at an existing path.
func loadPath(path string, info fs.FileInfo) (*tokenize.Tokenizer, error) {
	if info.IsDir() {
		return loadDir(path)
	}
	return loadFile(path)
}

// loadDir loads the tokenizer a directory holds.
func loadDir(dir string) (*tokenize.Tokenizer, error) {
	name := filepath.Base(absPath(dir))
	has := func(file string) bool {
		info, err := os.Stat(filepath.Join(dir, file))
		return err == nil && !info.IsDir()
	}
	switch {
	case has(hfFile):
		return loadHFFile(filepath.Join(dir, hfFile), name)
	case has(vocabFile) && has(mergesFile):
		return loadVocabMerges(filepath.Join(dir, vocabFile), filepath.Join(dir, mergesFile), name)
	case has(vocabFile):
		return nil, fmt.Errorf("spec: directory %s has %s but no %s beside it", dir, vocabFile, mergesFile)
	case has(mergesFile):
		return nil, fmt.Errorf("spec: directory %s has %s but no %s beside it", dir, mergesFile, vocabFile)
	case has(charsFile):
		return loadChars(filepath.Join(dir, charsFile), name)
	}
	return nil, fmt.Errorf("spec: directory %s holds no tokenizer: want %s, %s with %s, or %s", dir, hfFile, vocabFile, mergesFile, charsFile)
}

// loadFile loads a tokenizer file, telling its kind from its name and content.
func loadFile(path string) (*tokenize.Tokenizer, error) {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, tiktokenExt):
		return loadTiktoken(path)
	case base == vocabFile:
		return loadVocabMerges(path, filepath.Join(filepath.Dir(path), mergesFile), tokenizerName(path))
	case base == mergesFile:
		return loadVocabMerges(filepath.Join(filepath.Dir(path), vocabFile), path, tokenizerName(path))
	case base == charsFile:
		return loadChars(path, tokenizerName(path))
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	// A JSON object that breaks off (a truncated download) is read as a tokenizer.json,
	// whose error names the byte where it breaks and the next step.
	if t := bytes.TrimSpace(data); isHFJSON(data) || len(t) > 0 && t[0] == '{' && !json.Valid(t) {
		return wrapLoad(path)(tokenize.LoadHFJSON(data, tokenizerName(path)))
	}
	if json.Valid(data) {
		tok, err := tokenize.LoadChars(data, tokenizerName(path))
		if err != nil {
			return nil, fmt.Errorf("spec: %s is JSON but neither a tokenizer.json (no top-level \"model\") nor a character vocabulary: %w", path, err)
		}
		return tok, nil
	}
	return nil, fmt.Errorf("spec: %s is not a tokenizer file: want a tokenizer.json, a .tiktoken file, %s with %s, or %s", path, vocabFile, mergesFile, charsFile)
}

func loadHFFile(path, name string) (*tokenize.Tokenizer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return wrapLoad(path)(tokenize.LoadHFJSON(data, name))
}

func loadVocabMerges(vocabPath, mergesPath, name string) (*tokenize.Tokenizer, error) {
	vocab, err := readFile(vocabPath)
	if err != nil {
		return nil, err
	}
	merges, err := readFile(mergesPath)
	if err != nil {
		return nil, err
	}
	return wrapLoad(vocabPath + " + " + filepath.Base(mergesPath))(tokenize.LoadVocabMerges(vocab, merges, name))
}

func loadChars(path, name string) (*tokenize.Tokenizer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return wrapLoad(path)(tokenize.LoadChars(data, name))
}

// loadTiktoken loads a .tiktoken rank file named after its encoding.
func loadTiktoken(path string) (*tokenize.Tokenizer, error) {
	encoding := strings.TrimSuffix(filepath.Base(path), tiktokenExt)
	if known := tokenize.TiktokenEncodings(); !slices.Contains(known, encoding) {
		return nil, fmt.Errorf("spec: %s: cannot tell the tiktoken encoding from the file name; known encodings are %s: rename the file to <encoding>.tiktoken (e.g. cl100k_base.tiktoken)", path, strings.Join(known, ", "))
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return wrapLoad(path)(tokenize.LoadTiktoken(data, encoding))
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("spec: tokenizer file %s does not exist", path)
		}
		return nil, fmt.Errorf("spec: %w", err)
	}
	return data, nil
}

// wrapLoad returns a function that passes a loader's result on, its error wrapped
// with what was loaded.
func wrapLoad(what string) func(*tokenize.Tokenizer, error) (*tokenize.Tokenizer, error) {
	return func(tok *tokenize.Tokenizer, err error) (*tokenize.Tokenizer, error) {
		if err != nil {
			return nil, fmt.Errorf("spec: load %s: %w", what, err)
		}
		return tok, nil
	}
}

// tokenizerName names the tokenizer in a file: the file's base name without its
// extension or, for the generic names (tokenizer.json, vocab.json, ...), the name of
// the directory holding it.
func tokenizerName(path string) string {
	base := filepath.Base(path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	switch base {
	case hfFile, vocabFile, mergesFile, charsFile:
		if dir := filepath.Base(filepath.Dir(absPath(path))); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return stem
}

func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// isHFJSON reports whether data is a JSON object with a top-level "model" key, as a
// Hugging Face tokenizer.json is. It reads no further than that key.
func isHFJSON(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		if key == "model" {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}
