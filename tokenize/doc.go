// Package tokenize is a pure-Go byte-level BPE tokenizer that gives the same ids as
// Hugging Face `tokenizers` (GPT-2, GPT-NeoX-20B and any tokenizer.json of that family)
// and as tiktoken (gpt2/r50k_base, cl100k_base, o200k_base), plus the character-level
// tokenizers of nanoGPT and GPT-NeoX.
//
// Why it is written by hand: the only Go bindings that match HF's ids wrap the Rust
// library through cgo (github.com/daulet/tokenizers), which cannot be built here and
// breaks the static binary; Go's regexp has no lookahead and its Unicode classes are
// 15.0 where HF's are 16.0; and golang.org/x/text/unicode/norm differs from HF's NFC
// (Unicode 9.0 data) on 840 code points. So the pre-tokenizers are hand-made scanners
// over generated class tables, NFC is computed from generated Unicode 9.0 tables, and
// the BPE merge loop is our own.
//
// Layout (how the encoder is fast, what was tried and rejected, and the figures:
// docs/tokenizer-performance.md):
//   - tokenizer.go: the Tokenizer type and its API (Encode, AppendEncode,
//     AppendEncodeInt32, EncodeBatch, Decode, ...); cut.go: Cut, where a text can be
//     encoded in parts.
//   - encode.go: the encode path (added tokens, normalization, pre-tokenization, then
//     each piece through the caches or the merge loop); cache.go: the per-goroutine
//     front cache and piece cache; vocabtable.go: the vocabulary by bytes.
//   - classify*.go: the byte classes, 64 bytes at a time (AVX2, and its pure-Go SWAR
//     twin, the only one under the noasm tag), for the pre-tokenizers;
//     utf8valid_amd64.*: Encode's UTF-8 check, 32 bytes a step (AVX2; utf8.ValidString,
//     its twin, checks a byte at a time, 26× slower on non-Latin text).
//   - split_blocks.go, split_gpt2.go, split_tiktoken.go: the pre-tokenizers: piece
//     starts of whole blocks in bit arithmetic, a piece at a time where a block does not
//     allow it; split_o200k.go: o200k's, a piece at a time; pattern.go: the regexes
//     run literally, which tests compare them with.
//   - bpe.go, bpe_ranks.go, pairtable.go: the merge loops (HF's pair ranks, tiktoken's
//     byte ranks); bytepairs.go: the byte pairs' ranks they start from; bpe_chars.go:
//     tiktoken's merges started from whole characters where that changes nothing;
//     bpe_backtrack.go, prefixtable.go: pieces over 16 bytes under HF's merges encoded in
//     one pass by backtracking over compatible token pairs; bpe_digits.go: runs of
//     digits, by the last token of each prefix's encoding; makeids.go: Encode's result,
//     allocated without clearing; reference.go: the slow, obvious encoder tests compare
//     Encode with.
//   - added.go: splitting text on added tokens (leftmost-longest).
//   - classes*.go: HF's Unicode 16.0 letter/number/space classes (generated).
//   - nfc*.go: HF-compatible NFC (Unicode 9.0 data, generated).
//   - load_*.go, build.go: tokenizer.json, vocab.json+merges.txt, .tiktoken, char
//     vocabularies; compiled.go: the compiled form the named tokenizers load from.
//   - train*.go: byte-level BPE training that writes a tokenizer.json.
//
// The package does no I/O beyond what its callers hand it (bytes, readers); resolving a
// tokenizer name to a file, caching and downloading live in package tokenize/spec.
package tokenize
