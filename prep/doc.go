// Package prep reads raw corpora into documents, the way GPT-NeoX's lm_dataformat
// does: ReadDocs (and ReadBatches) walk a list of .jsonl, .jsonl.zst, .jsonl.gz,
// .json.gz and .txt[.gz|.zst] files in order and hand on one Doc per JSON line (its
// "text" member, a string or a list of strings joined with "\n\n") or per text file,
// dropping empty texts. Errors name the file and line and say what to do next.
//
// # Why TextField is hand-written
//
// Pulling one string out of a JSON line with encoding/json costs about as much CPU as
// tokenizing it: a profile of `tokenize encode --jsonl` put encoding/json's checkValid,
// stateInString and unquote at about 30% of single-core time. encoding/json validates
// the whole line with a byte-at-a-time state machine, then scans it a second time to
// decode, and builds every member of the object along the way.
//
// TextField makes one pass: it validates the line with the same grammar, skipping the
// members it does not need, remembers where the wanted value is, and decodes only that
// one (one copy when it holds no escapes). Strings are scanned and decoded 64 bytes per
// AVX-512 step (VBMI2: escapes dropped by VPCOMPRESSB, translated by VPERMI2B) or 32 per
// AVX2 step (jsontext_amd64.s: quotes, backslashes, control and non-ASCII bytes as
// masks, escapes found by mask arithmetic rather than a branch each, as corpora have
// one every 9-40 bytes), with 8-byte SWAR loops as the twin (the only version under
// -tags noasm); FuzzJSONString checks every level against encoding/json. Anything it does not
// handle (invalid JSON, a value that is not text, deep nesting) goes to encoding/json,
// so results and errors are encoding/json's; FuzzTextField checks that against a plain
// encoding/json reference, and the parity corpus checks real lines.
//
// Measured on the project's 2-vCPU Xeon VM (go test ./prep -bench TextField -cpu 1),
// on a 4.3 KB Pile-style line of English with a newline, quotes or a tab every ~60
// bytes and some non-ASCII:
//
//	TextField                                          1100 MB/s
//	encoding/json, map[string]json.RawMessage + string   113 MB/s  (what cmd/tokenize did)
//	encoding/json, struct{ Text string }                 190 MB/s
//	TextField, 4 KB of ASCII without escapes           2400 MB/s
//
// On the bench's mixed corpus as 4 KB documents (an escape every 9 bytes: man pages'
// groff escapes, newlines; BenchmarkTextFieldJSONL, CPU time of 20 passes over 40 MB,
// 2026-11-26) TextField went from ~570 MB/s (SWAR) to ~1,100 (AVX2) and ~2,000
// (AVX-512 where the CPU has VBMI2, as the team's Sapphire Rapids VM does).
//
// With it, `tokenize encode --jsonl --workers 1` with GPT-2 on tinyshakespeare as
// ~4 KB JSONL documents went from 28 to 38 MB/s (BenchmarkEncodeJSONL in
// cmd/tokenize, loading the tokenizer included); the JSON is now about 6% of the time.
package prep
