package prep

import (
	"errors"
	"fmt"
)

// Stripes: how several readers share one compressed JSONL file.
//
// A compressed stream cannot be entered in the middle: the bytes at an offset of the
// .zst or .gz file do not say where a line begins, nor what the decompressor's state is
// there. Readers that share such a file therefore each decompress all of it, and share
// the parsing (and what follows: tokenizing, by far the larger cost) instead. The
// uncompressed stream is cut into stripes of StripeBytes bytes, stripe b being the
// bytes [b·StripeBytes, (b+1)·StripeBytes); a line belongs to the stripe its first
// byte lies in, however long it is; reader j of k hands on the lines of the stripes b
// with b mod k == j. Nobody needs to know the uncompressed size, the k readers
// together hand on every line exactly once, and stripe by stripe (stripe 0 of reader
// 0, stripe 1 of reader 1, ...) they hand on the documents of the whole file in order.
// A reader finds the end of a line of a stripe it does not own with a newline scan
// only: no JSON parsing, no counting (the owner of the stripe counts its empty, bad
// and filtered records), so that what the k readers count adds up to the whole
// file's counts.
//
// What a reader pays for the stripes it skips is their decompression and a newline
// scan: BenchmarkStripeSkip in pipelines measures it against tokenizing.

// Stripable reports whether file can be read in stripes (see Striped): a JSONL file,
// compressed or not, by its name (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz).
func Stripable(file string) bool {
	f, ok := formatOf(file)
	return ok && f.kind == jsonlKind
}

// Striped is the FileRange of the lines of file that start in the stripes b of
// stripeBytes bytes of its uncompressed stream with b mod mod == rem: reader rem of mod
// readers that share the file.
func Striped(file string, stripeBytes int64, mod, rem int) FileRange {
	return FileRange{File: file, End: -1, StripeBytes: stripeBytes, StripeMod: mod, StripeRem: rem}
}

// IsStriped reports whether r reads stripes of a file (see Striped).
func (r FileRange) IsStriped() bool { return r.StripeMod > 0 }

// OwnsStripe reports whether the striped range r hands on the lines of stripe b.
func (r FileRange) OwnsStripe(b int64) bool {
	return r.IsStriped() && b%int64(r.StripeMod) == int64(r.StripeRem)
}

// checkStripes reports stripes that cannot be read as asked.
func (r FileRange) checkStripes(f format) error {
	bad := func(err error, hint string) error { return &FileError{File: r.File, Err: err, Hint: hint} }
	switch {
	case r.StripeMod < 1 || r.StripeRem < 0 || r.StripeRem >= r.StripeMod:
		return bad(fmt.Errorf("bad stripes: remainder %d modulo %d", r.StripeRem, r.StripeMod), "a striped range needs 0 <= StripeRem < StripeMod")
	case r.StripeBytes < 1:
		return bad(fmt.Errorf("bad stripes: %d bytes each", r.StripeBytes), "give StripeBytes > 0")
	case !r.IsWhole() || r.Start != 0:
		return bad(fmt.Errorf("stripes of the byte range [%d, %d)", r.Start, r.End), "stripes cover the whole file: Start 0, End -1")
	case f.kind != jsonlKind:
		return bad(errors.New("cannot read stripes of a file that is not JSONL (one document per line)"), "read the file whole")
	}
	return nil
}

// stripedSpan is the lineSpan of the striped range rg: every line of the stream,
// numbered, of which only those of rg's stripes are handed on.
func stripedSpan(rg FileRange) lineSpan {
	return lineSpan{end: -1, numbered: true, stripeBytes: rg.StripeBytes, stripeMod: int64(rg.StripeMod), stripeRem: int64(rg.StripeRem)}
}

// stripeOf returns the stripe of the line at offset off of the stream and whether the
// span owns it (always, without stripes).
func (s lineSpan) stripeOf(off int64) (b int64, owned bool) {
	if s.stripeMod == 0 {
		return 0, true
	}
	b = off / s.stripeBytes
	return b, b%s.stripeMod == s.stripeRem
}
