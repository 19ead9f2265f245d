// Package embedded holds the files of the tokenizers gptkit knows by name (gpt2,
// neox-20b, cl100k_base, o200k_base), compressed with zstd: what their compiled forms
// (package compiled, which the binaries carry) are made from and checked against, and
// what the tests read. Only the generator and the tests import it.
//
// The files are the publishers' own, byte for byte (NOTICE at the repository root gives
// provenance, licence and sha256 of each; tokenize/spec's tests check every digest).
// tools/embed-tokenizers.sh rewrites them from the team's copies.
package embedded

import (
	"embed"
	"path"

	"gptkit/internal/zstdfs"
)

//go:embed */*.zst
var files embed.FS

// Read returns the content of file name of the named tokenizer's directory (gpt2,
// neox-20b, cl100k_base, o200k_base), e.g. Read("gpt2", "vocab.json").
func Read(tokenizer, name string) ([]byte, error) {
	return zstdfs.ReadFile(files, path.Join(tokenizer, name), "embedded")
}
