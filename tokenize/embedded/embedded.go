// Package embedded holds the files of the tokenizers gptkit knows by name (gpt2,
// neox-20b, cl100k_base, o200k_base), compressed with zstd and compiled into the
// binaries, so that a named tokenizer never needs the network.
//
// The files are the publishers' own, byte for byte (NOTICE at the repository root gives
// provenance, licence and sha256 of each; tokenize/spec's tests check every digest).
// tools/embed-tokenizers.sh rewrites them from the team's copies. Beside them, each
// directory holds the tokenizer's compiled form (Compiled, tokenize.LoadCompiled), which
// is what tokenize/spec loads: go generate writes it from the publisher's files, and
// tokenize/spec's tests check that it still matches them (make check-generated too).
package embedded

//go:generate go run ../internal/gen/compiled

import (
	"embed"
	"fmt"
	"path"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compiled is the name of the compiled form in each tokenizer's directory.
const Compiled = "compiled.tok"

//go:embed */*.zst
var files embed.FS

// decoder decompresses the embedded files, made on first use (not at every program's
// start); DecodeAll is safe for concurrent use.
var decoder = sync.OnceValues(func() (*zstd.Decoder, error) { return zstd.NewReader(nil) })

// Read returns the content of file name of the named tokenizer's directory (gpt2,
// neox-20b, cl100k_base, o200k_base), e.g. Read("gpt2", "vocab.json").
func Read(tokenizer, name string) ([]byte, error) {
	compressed, err := files.ReadFile(path.Join(tokenizer, name) + ".zst")
	if err != nil {
		return nil, fmt.Errorf("embedded: no file %s/%s: %w", tokenizer, name, err)
	}
	dec, err := decoder()
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	data, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("embedded: decompress %s/%s: %w", tokenizer, name, err)
	}
	return data, nil
}
