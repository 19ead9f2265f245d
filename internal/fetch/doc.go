// Package fetch downloads files so that a file under its final name is always
// complete and checked: GPT-NeoX's prepare_data.py ran `wget URL -O file`, so a
// truncated download got tokenized and a failed one left an empty vocabulary behind.
//
// Fetch takes a list of Files, each with the URLs to try in order (mirrors first,
// then the original), its local path Dest, and its size and sha256 where known. It
// downloads several files at once (Options.Parallel); the first failure cancels the
// rest. For each file:
//
//  1. It takes an exclusive lock on Dest.lock (flock; the kernel drops it when the
//     process dies), so that processes and goroutines sharing a directory download a
//     file once. The lock file is removed again when the download ends.
//  2. If Dest exists and checks out (its size, its sha256 when known, Options.Validate
//     when no sha256 is known), there is nothing to do. A Dest that fails is removed
//     and downloaded again, once: if the new copy fails too, that is an error.
//  3. Otherwise bytes go to Dest.part, resumed with an HTTP Range request from where an
//     earlier attempt (or an earlier, killed process) stopped. A 206 answer must carry
//     the Content-Range asked for; a server that ignores Range (answering 200) is
//     downloaded from byte 0. Failed attempts are retried with exponential backoff and
//     jitter, bounded by Options.Retries, and the count starts over whenever an attempt
//     got further into the file than any before it, so a flaky line still finishes a
//     30 GB file. 404, 403, 410 and other client errors are not retried: Fetch moves
//     on to the next URL. A response that sends no byte for Options.StallTimeout is
//     abandoned and retried.
//  4. The finished Dest.part is checked (Options.Validate on its first HeadSize bytes,
//     then its size, then its sha256), fsynced, and renamed to Dest; the directory is
//     fsynced too. A check that fails on bytes resumed from an earlier attempt starts
//     over from byte 0 once (the kept bytes may belong to another version of the
//     file); a check that fails on a fresh download moves on to the next URL.
//
// So Dest never holds a partial or unchecked file: a killed process leaves at most
// Dest.part, which the next run resumes. Dest.part.src records where its bytes came
// from (partsource.go): the URL, the first response's strong ETag or Last-Modified and
// the size it announced. A resume, in the same run or a later one, carries If-Range
// with that validator, so a file that changed on the server is sent whole; a resume
// that announces another size starts over; a rerun tries the recorded source first.
// Without a known sha256 another source's bytes are never spliced on: the next URL is
// asked for the whole file, and Dest.part is replaced only once it sends it (a source
// that fails too leaves it for a rerun), and a 200 in answer to a resume must pass
// Options.Validate on its head before the bytes kept are dropped. A local write error
// (a full disk) stops the fetch at once, keeping Dest.part: no source would do better.
//
// A Dest in a read-only directory (a shared, pre-staged copy) is checked without the
// lock and used when it passes.
//
// # The verification sidecar
//
// Hashing a 15 GB Pile shard takes about a minute, so every rerun would spend half an
// hour re-hashing the Pile. After Fetch has hashed Dest (downloaded, or found in place
// and checked), it writes Dest.sha256:
//
//	<64 hex digits>  <base name of Dest>
//	# gptkit-fetch size=<bytes> mtime=<unix nanoseconds>
//
// The first line is sha256sum's format, so `sha256sum -c 00.jsonl.zst.sha256` works
// in Dest's directory. A later Fetch trusts the recorded hash while Dest keeps the
// recorded size and modification time; any change to either (an edit, a copy, a
// truncation) makes it hash the file again. A change that keeps both (bit rot, or an
// edit followed by `touch -r`) goes unnoticed: delete the sidecar to force a re-hash.
// Options.NoSidecar turns the sidecar off for small files that the caller reads
// anyway.
//
// # Proxies
//
// The default client takes its proxy from HTTPS_PROXY, HTTP_PROXY and NO_PROXY
// (http.ProxyFromEnvironment, which never proxies requests to localhost or a loopback
// address).
package fetch
