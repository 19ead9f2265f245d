// Package compiled holds the compiled form (tokenize.LoadCompiled) of each tokenizer
// gptkit knows by name, zstd-compressed and compiled into the binaries: what
// tokenize/spec loads a named tokenizer from, with no parse of the publishers' files.
//
// go generate writes them from the publishers' files in tokenize/embedded, and
// tokenize/spec's tests check that they still match (make check-generated too). The
// publishers' files are in a package of their own, which only the generator and the tests
// import: a binary carries the compiled forms alone (~3 MB less each).
package compiled

//go:generate go run ../../internal/gen/compiled

import (
	"embed"
	"path"

	"gptkit/internal/zstdfs"
)

// File is the name of the compiled form in each tokenizer's directory (zstd-compressed,
// with ".zst" after it).
const File = "compiled.tok"

//go:embed */compiled.tok.zst
var files embed.FS

// Read returns the compiled form of the named tokenizer's directory (gpt2, neox-20b,
// cl100k_base, o200k_base).
func Read(tokenizer string) ([]byte, error) {
	return zstdfs.ReadFile(files, path.Join(tokenizer, File), "embedded")
}
