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
// tokenizer files stored beside the data in the local directory dir ("" for none), then
// the tokenizer known by that name (LoadName: never a file or directory of that name in
// the working directory; embedded: no network unless opt asks for a download), and returns the first whose fingerprint is fingerprint. The error says
// what each candidate was.
func ForDataset(ctx context.Context, dir, name, fingerprint string, opt Options) (*tokenize.Tokenizer, error) {
	var tried []string
	if dir != "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			triedDir := false
			for _, file := range DatasetFiles {
				if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
					continue
				}
				path := dir // Load's choice among the files it finds in a directory
				if strings.HasSuffix(file, tiktokenExt) {
					path = filepath.Join(dir, file)
				} else if triedDir {
					continue
				} else {
					triedDir = true
				}
				tok, err := Load(ctx, path, Options{})
				if err != nil {
					return nil, fmt.Errorf("spec: the tokenizer beside the data: %w", err)
				}
				if tok.Fingerprint() == fingerprint {
					return tok, nil
				}
				// A rank file of another encoding (a user's copy of a built-in one,
				// which is never stored) may lie beside the one stored: each is tried.
				tried = append(tried, fmt.Sprintf("%s has fingerprint %s", filepath.Join(dir, file), shortFingerprint(tok.Fingerprint())))
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

// shortFingerprint is the first 12 hex digits of a fingerprint, as messages show it.
func shortFingerprint(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// Beside loads the tokenizer stored beside the data in the local directory dir, as
// ForDataset tries it first (ForDataset goes on to any other .tiktoken rank file): the
// first of DatasetFiles there (a tokenizer.json, vocab.json
// with merges.txt, or chars.json as Load reads dir; a .tiktoken rank file by itself).
// path is that file; tok is nil when dir holds none.
func Beside(ctx context.Context, dir string) (tok *tokenize.Tokenizer, path string, err error) {
	for _, file := range DatasetFiles {
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			continue
		}
		load := dir // Load's choice among the files it finds in a directory
		if strings.HasSuffix(file, tiktokenExt) {
			load = filepath.Join(dir, file)
		}
		tok, err := Load(ctx, load, Options{})
		if err != nil {
			return nil, "", fmt.Errorf("spec: the tokenizer beside the data: %w", err)
		}
		return tok, filepath.Join(dir, file), nil
	}
	return nil, "", nil
}
