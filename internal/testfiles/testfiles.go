// Package testfiles serves tests the data files they need, all shipped in the repository
// (no ../shared): the repository's testdata/ directory, where a file may be stored
// zstd-compressed as NAME.zst, plus the data compiled into the binaries. Tests name
// files by these relative paths:
//
//	tokenizers/gpt2/vocab.json, tokenizers/gpt2/merges.txt   (embedded, tokenize/embedded)
//	tokenizers/gpt2/tokenizer.json                           (testdata)
//	tokenizers/neox-20b/tokenizer.json                       (embedded)
//	tokenizers/tiktoken/cl100k_base.tiktoken, .../o200k_base.tiktoken (embedded)
//	corpora/tinyshakespeare.txt                              (embedded, internal/tinyshakespeare)
//	corpora/parity.jsonl      a sample of the team's parity corpus: 1,896 {"text": ...} lines
//	golden/NAME.jsonl         {"text","ids"} per parity.jsonl line: the ids Hugging Face
//	                          tokenizers 0.23.2 (gpt2, neox-20b) or tiktoken 1.0.22
//	                          (cl100k_base, o200k_base) give; stored as golden/NAME.ids
//
// NOTICE at the repository root gives each file's provenance and licence, and
// tools/make-testdata.py rewrites them from the team's shared/ directory. Large
// benchmark inputs stay in shared/ (package sharedtest, benchmarks only).
package testfiles

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"gptkit/internal/tinyshakespeare"
	"gptkit/tokenize/embedded"
)

// Dir returns the repository's testdata directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0) // .../internal/testfiles/testfiles.go
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}

// builtin are the files that do not sit in testdata/: rel -> how to make them.
var builtin map[string]func() ([]byte, error)

func init() {
	builtin = map[string]func() ([]byte, error){
		"tokenizers/gpt2/vocab.json":               embeddedFile("gpt2", "vocab.json"),
		"tokenizers/gpt2/merges.txt":               embeddedFile("gpt2", "merges.txt"),
		"tokenizers/neox-20b/tokenizer.json":       embeddedFile("neox-20b", "tokenizer.json"),
		"tokenizers/tiktoken/cl100k_base.tiktoken": embeddedFile("cl100k_base", "cl100k_base.tiktoken"),
		"tokenizers/tiktoken/o200k_base.tiktoken":  embeddedFile("o200k_base", "o200k_base.tiktoken"),
		"corpora/tinyshakespeare.txt":              tinyshakespeare.Text,
		"golden/gpt2.jsonl":                        goldenFile("gpt2"),
		"golden/neox-20b.jsonl":                    goldenFile("neox-20b"),
		"golden/cl100k_base.jsonl":                 goldenFile("cl100k_base"),
		"golden/o200k_base.jsonl":                  goldenFile("o200k_base"),
	}
}

func embeddedFile(tokenizer, name string) func() ([]byte, error) {
	return func() ([]byte, error) { return embedded.Read(tokenizer, name) }
}

// cache keeps what read made, once per test binary: rel -> []byte.
var cache sync.Map

// read returns the content of rel, or an error naming what is missing.
func read(rel string) ([]byte, error) {
	rel = filepath.ToSlash(filepath.Clean(rel))
	if data, ok := cache.Load(rel); ok {
		return data.([]byte), nil
	}
	var data []byte
	var err error
	if make, ok := builtin[rel]; ok {
		data, err = make()
	} else {
		data, err = readTestdata(rel)
	}
	if err != nil {
		return nil, err
	}
	cache.Store(rel, data)
	return data, nil
}

// readTestdata reads testdata/rel, or testdata/rel.zst decompressed.
func readTestdata(rel string) ([]byte, error) {
	path := filepath.Join(Dir(), filepath.FromSlash(rel))
	data, err := os.ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	compressed, zerr := os.ReadFile(path + ".zst")
	if zerr != nil {
		return nil, fmt.Errorf("testfiles: neither %s nor %s.zst exists: %w", path, path, err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, err = dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("testfiles: decompress %s.zst: %w", path, err)
	}
	return data, nil
}

// Read returns the content of the file rel (see the package documentation).
func Read(tb testing.TB, rel string) []byte {
	tb.Helper()
	data, err := read(rel)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Path returns the path of the file or directory rel, written under tb.TempDir() with
// its relative path kept (a tokenizer's directory and file names matter). A directory
// holds every file this package knows under it: Path(tb, "tokenizers/gpt2") has
// vocab.json, merges.txt and tokenizer.json; a file comes with its siblings.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	rel = filepath.ToSlash(filepath.Clean(rel))
	root := tb.TempDir()
	dir := rel
	if _, err := read(rel); err == nil {
		dir = path.Dir(rel) // with its siblings: vocab.json finds merges.txt beside it
	}
	files := filesUnder(tb, dir)
	if len(files) == 0 {
		tb.Fatalf("testfiles: no file or directory %s (in %s or built in)", rel, Dir())
	}
	for _, f := range files {
		writeFile(tb, root, f)
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

// writeFile writes rel's content to root/rel.
func writeFile(tb testing.TB, root, rel string) {
	tb.Helper()
	dest := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dest, Read(tb, rel), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// filesUnder lists the files this package knows under dir (testdata and built in).
func filesUnder(tb testing.TB, dir string) []string {
	tb.Helper()
	var files []string
	for rel := range builtin {
		if strings.HasPrefix(rel, dir+"/") {
			files = append(files, rel)
		}
	}
	base := filepath.Join(Dir(), filepath.FromSlash(dir))
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(Dir(), path)
		files = append(files, strings.TrimSuffix(filepath.ToSlash(rel), ".zst"))
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// GoldenDoc is one line of golden/NAME.jsonl.
type GoldenDoc struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

// Golden returns the golden documents of tokenizer name (gpt2, neox-20b, cl100k_base,
// o200k_base), in the order of corpora/parity.jsonl.
func Golden(tb testing.TB, name string) []GoldenDoc {
	tb.Helper()
	var docs []GoldenDoc
	for i, line := range bytes.SplitAfter(Read(tb, "golden/"+name+".jsonl"), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var d GoldenDoc
		if err := json.Unmarshal(line, &d); err != nil {
			tb.Fatalf("golden/%s.jsonl line %d: %v", name, i+1, err)
		}
		docs = append(docs, d)
	}
	return docs
}

// goldenFile joins corpora/parity.jsonl's texts (as they are written there) with
// golden/name.ids, line by line, into {"text": ..., "ids": [...]} lines.
func goldenFile(name string) func() ([]byte, error) {
	return func() ([]byte, error) {
		corpus, err := read("corpora/parity.jsonl")
		if err != nil {
			return nil, err
		}
		ids, err := read("golden/" + name + ".ids")
		if err != nil {
			return nil, err
		}
		texts, idLines := bufio.NewScanner(bytes.NewReader(corpus)), bufio.NewScanner(bytes.NewReader(ids))
		texts.Buffer(nil, 64<<20)
		idLines.Buffer(nil, 64<<20)
		var out bytes.Buffer
		for line := 1; texts.Scan(); line++ {
			if !idLines.Scan() {
				return nil, fmt.Errorf("testfiles: golden/%s.ids has %d lines, corpora/parity.jsonl more", name, line-1)
			}
			var doc struct {
				Text json.RawMessage `json:"text"`
			}
			if err := json.Unmarshal(texts.Bytes(), &doc); err != nil {
				return nil, fmt.Errorf("testfiles: corpora/parity.jsonl line %d: %w", line, err)
			}
			fmt.Fprintf(&out, "{\"text\":%s,\"ids\":%s}\n", doc.Text, idLines.Bytes())
		}
		if idLines.Scan() {
			return nil, fmt.Errorf("testfiles: golden/%s.ids has more lines than corpora/parity.jsonl", name)
		}
		return out.Bytes(), errors.Join(texts.Err(), idLines.Err())
	}
}
