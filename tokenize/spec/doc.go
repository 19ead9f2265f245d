// Package spec resolves a tokenizer SPEC, as given to --tokenizer, to a
// *tokenize.Tokenizer.
//
// A SPEC is resolved in this order; an existing path always wins over a name:
//
//  1. An existing directory holding, in order of preference, tokenizer.json (Hugging
//     Face), vocab.json with merges.txt (GPT-2 style), or chars.json (a nanoGPT
//     character vocabulary).
//  2. An existing file: a *.tiktoken rank file, whose encoding comes from the base name
//     (cl100k_base.tiktoken, o200k_base.tiktoken, r50k_base.tiktoken, gpt2.tiktoken);
//     vocab.json or merges.txt (the other one must sit beside it); any file whose
//     content is a JSON object with a top-level "model" (a Hugging Face tokenizer.json,
//     whatever its name); any other JSON file (chars.json) is read as a character
//     vocabulary.
//  3. A name (see Names): gpt2, r50k_base (the GPT-2 files under another name),
//     neox-20b, cl100k_base, o200k_base, and char (the GPT-NeoX byte-level character
//     tokenizer, which needs no file).
//  4. A Hugging Face model id ORG/NAME, or an http(s) URL of one tokenizer file:
//     downloaded once into the cache (see remote.go), checked against Options.SHA256
//     when given. A missing ORG/NAME whose NAME ends as a tokenizer file does (.json,
//     .tiktoken, .txt) is a missing path, not an id (a mistyped data/tokenizer.json is
//     not looked for on Hugging Face); one whose ORG is a local directory is an id, whose
//     failure says it is no local path either.
//
// A path or a download that holds a copy of a built-in's files loads as that built-in,
// named so (builtin.go): its fingerprint (Hugging Face's gpt2 files in a directory of
// any name), or, for gpt2.tiktoken and r50k_base.tiktoken, GPT-2's tokens ranked by
// their ids (OpenAI's r50k_base.tiktoken, which has no fingerprint of its own to match
// since the built-in is built from vocab.json and merges.txt).
//
// Named tokenizers are built from their files embedded in the binary (package
// tokenize/embedded: the publishers' files, zstd-compressed), so a name never needs the
// network. Options.URL or Options.SHA256 asks for a download instead (a mirror, or
// another version of the files): the files are then read from a cache directory, by
// default $GPTKIT_CACHE/tokenizers or else <os.UserCacheDir>/gptkit/tokenizers, one
// subdirectory per tokenizer (gpt2/vocab.json, neox-20b/tokenizer.json,
// cl100k_base/cl100k_base.tiktoken, ...). A missing file is downloaded once, checked
// against its sha256 (the canonical one unless Options.SHA256 says otherwise) and
// published atomically: bytes go to NAME.part in the same directory (resumed with an
// HTTP Range request after an interruption), which is fsynced and renamed to NAME only
// when its sha256 matches. So a file under its final name is always complete. A cached
// file whose sha256 does not match is downloaded again. Processes sharing a cache take
// an advisory lock on the file while they download it (package internal/fetch), so it
// is fetched once.
package spec
