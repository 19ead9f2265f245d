// Package tinyshakespeare holds tiny Shakespeare (karpathy/char-rnn's
// data/tinyshakespeare/input.txt, 1,115,394 bytes, the text nanoGPT and llm.c train
// their first models on), zstd-compressed and compiled into the binaries, so that
// `prep shakespeare` and the demo work offline. NOTICE at the repository root gives its
// provenance and licence; tools/make-testdata.py rewrites the file.
package tinyshakespeare

import (
	_ "embed"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Size and SHA256 are those of char-rnn's input.txt, which Text returns.
const (
	Size   = 1115394
	SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
)

//go:embed input.txt.zst
var compressed []byte

// Text returns the text, decompressed afresh (the caller may change it).
func Text() ([]byte, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("tinyshakespeare: %w", err)
	}
	defer dec.Close()
	data, err := dec.DecodeAll(compressed, make([]byte, 0, Size))
	if err != nil {
		return nil, fmt.Errorf("tinyshakespeare: decompress: %w", err)
	}
	return data, nil
}
