// Command compiled writes the compiled form (tokenize.Tokenizer.MarshalCompiled) of each
// named tokenizer into its directory of tokenize/embedded/compiled, zstd-compressed,
// built from the publisher's files in tokenize/embedded. Run by go generate in
// tokenize/embedded/compiled; the
// output is the same bytes for the same files.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"gptkit/tokenize/embedded"
	"gptkit/tokenize/embedded/compiled"
	"gptkit/tokenize/spec"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen/compiled:", err)
		os.Exit(1)
	}
}

func run() error {
	// Literals stored raw (no Huffman coding): the compiled forms are mostly token bytes
	// and offsets, which compress little (o200k_base 1.57:1 at the best level); decoding
	// Huffman-coded literals took 5.6 ms of o200k_base's load, raw ones 2.4 ms, for a
	// file a third larger (1.87 MB against 1.40; docs/tokenizer-performance.md).
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithNoEntropyCompression(true), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	dirs, names := spec.EmbeddedDirs()
	for i, dir := range dirs {
		tok, err := spec.FromFiles(names[i], embedded.Read)
		if err != nil {
			return err
		}
		data, err := tok.MarshalCompiled()
		if err != nil {
			return err
		}
		out := filepath.Join(dir, compiled.File+".zst") // go generate runs in tokenize/embedded/compiled
		if err := os.WriteFile(out, enc.EncodeAll(data, nil), 0o644); err != nil {
			return err
		}
	}
	return nil
}
