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
// Layout:
//   - tokenizer.go: the Tokenizer type and its API (Encode, EncodeBatch, Decode, ...).
//   - added.go: splitting text on added tokens (leftmost-longest).
//   - bpe.go: the fast merge loop; reference.go: the slow, obvious encoder tests compare it to.
//   - split_gpt2.go, split_tiktoken.go: pre-tokenizers (hand-made scanners).
//   - classes*.go: HF's Unicode 16.0 letter/number/space classes (generated).
//   - nfc*.go: HF-compatible NFC (Unicode 9.0 data, generated).
//   - load_*.go: tokenizer.json, vocab.json+merges.txt, .tiktoken, char vocabularies.
//   - train*.go: byte-level BPE training that writes a tokenizer.json.
//
// The package does no I/O beyond what its callers hand it (bytes, readers); resolving a
// tokenizer name to a file, caching and downloading live in package tokenize/spec.
package tokenize
