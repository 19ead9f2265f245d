// Package zstdfs reads zstd-compressed files from a file system (the packages that
// embed such files with go:embed: tokenize/embedded and tokenize/embedded/compiled).
package zstdfs

import (
	"fmt"
	"io/fs"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// decoder decompresses the files, made on first use (not at every program's start);
// DecodeAll is safe for concurrent use.
var decoder = sync.OnceValues(func() (*zstd.Decoder, error) { return zstd.NewReader(nil) })

// ReadFile returns the decompressed content of name+".zst" in fsys. Its errors name the
// file as name, prefixed by what.
func ReadFile(fsys fs.FS, name, what string) ([]byte, error) {
	compressed, err := fs.ReadFile(fsys, name+".zst")
	if err != nil {
		return nil, fmt.Errorf("%s: no file %s: %w", what, name, err)
	}
	dec, err := decoder()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	data, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: decompress %s: %w", what, name, err)
	}
	return data, nil
}
