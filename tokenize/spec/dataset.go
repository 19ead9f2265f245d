package spec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/tokenize"
)

// DatasetFiles are the tokenizer files a dataset may keep beside its shards (prep
// shakespeare stores chars.json; tokenize run the files of a tokenizer loaded from a
// path), in the order ForDataset tries them: those Load finds in a directory, in its
// order of preference, then the .tiktoken rank files of the known encodings (each
// named after its encoding, which Load reads as a file: cl100k_base.tiktoken).
var DatasetFiles = append([]string{hfFile, vocabFile, mergesFile, charsFile}, tiktokenFiles()...)

// tiktokenFiles are the names of the .tiktoken files of the known encodings.
func tiktokenFiles() []string {
	var files []string
	for _, enc := range tokenize.TiktokenEncodings() {
		files = append(files, enc+tiktokenExt)
	}
	return files
}

// ForDataset finds the tokenizer a dataset was made with, given what its manifest (or
// a checkpoint) records: the tokenizer's name and fingerprint. It tries, in order, the
// tokenizer files stored beside the data in the local directory dir ("" for none), each
// by itself (besideFiles: a tokenizer.json, vocab.json with merges.txt, chars.json, each
// .tiktoken rank file; a user's own file kept there, such as another tokenizer.json in
// the directory --tokenizer named, or a copy of a built-in rank file, may lie beside
// the one stored), then the tokenizer known by that name (LoadName: never a file or
// directory of that name in the working directory; embedded: no network unless opt
// asks for a download), and returns the first whose fingerprint is fingerprint. The
// error says what each candidate was.
func ForDataset(ctx context.Context, dir, name, fingerprint string, opt Options) (*tokenize.Tokenizer, error) {
	var tried []string
	if dir != "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			for _, path := range besideFiles(dir) {
				tok, err := loadBeside(path)
				if err != nil {
					tried = append(tried, fmt.Sprintf("the tokenizer beside the data: %v", err))
					continue
				}
				if tok.Fingerprint() == fingerprint {
					return tok, nil
				}
				tried = append(tried, fmt.Sprintf("%s has fingerprint %s", path, shortFingerprint(tok.Fingerprint())))
			}
		} else {
			tried = append(tried, fmt.Sprintf("the dataset directory %s is not there", dir))
		}
	}
	if slices.Contains(Names(), name) {
		tok, err := LoadName(ctx, name, opt)
		if err != nil {
			return nil, err
		}
		if tok.Fingerprint() == fingerprint {
			return tok, nil
		}
		tried = append(tried, fmt.Sprintf("the known %s has fingerprint %s", name, shortFingerprint(tok.Fingerprint())))
	} else {
		tried = append(tried, fmt.Sprintf("%q is not a known tokenizer name (%s)", name, strings.Join(Names(), ", ")))
	}
	return nil, fmt.Errorf("spec: no tokenizer with the fingerprint %s of %s: %s", shortFingerprint(fingerprint), name, strings.Join(tried, "; "))
}

// besideFiles are the tokenizer files (DatasetFiles) in the local directory dir, in
// their order, each a path Load reads as one tokenizer: vocab.json stands for the pair
// with merges.txt (merges.txt is named alone only without a vocab.json, which Load
// then reports missing).
func besideFiles(dir string) []string {
	has := func(file string) bool {
		fi, err := os.Stat(filepath.Join(dir, file))
		return err == nil && !fi.IsDir()
	}
	var paths []string
	for _, file := range DatasetFiles {
		if !has(file) || (file == mergesFile && has(vocabFile)) {
			continue
		}
		paths = append(paths, filepath.Join(dir, file))
	}
	return paths
}

// shortFingerprint is the first 12 hex digits of a fingerprint, as messages show it.
func shortFingerprint(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// Beside loads the tokenizer stored beside the data in the local directory dir, as
// ForDataset finds it there: the first of besideFiles whose fingerprint is
// fingerprint, else the first there that loads (a user's own file may lie beside the
// one stored). path is that file; tok is nil when dir holds none.
func Beside(ctx context.Context, dir, fingerprint string) (tok *tokenize.Tokenizer, path string, err error) {
	var loadErr error // the first file's that did not load: the error when none did
	for _, p := range besideFiles(dir) {
		t, err := loadBeside(p)
		if err != nil {
			if loadErr == nil {
				loadErr = fmt.Errorf("spec: the tokenizer beside the data: %w", err)
			}
			continue
		}
		if t.Fingerprint() == fingerprint {
			return t, p, nil
		}
		if tok == nil {
			tok, path = t, p
		}
	}
	if tok == nil && loadErr != nil {
		return nil, "", loadErr
	}
	return tok, path, nil
}

// loadBeside loads a tokenizer file stored beside a dataset as it is: not as the
// built-in it may be a copy of (Load), whose fingerprint an older dataset's manifest
// may not record (an r50k_base.tiktoken stored before Load took it for the built-in).
func loadBeside(path string) (*tokenize.Tokenizer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return loadPath(path, info)
}
