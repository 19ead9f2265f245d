//go:build amd64 && !noasm && gc

package prep

import "golang.org/x/sys/cpu"

// Stubs of jsontext_amd64.s: the plain stretches of JSON strings, 32 bytes per AVX2
// step (the SWAR loops of scanString and decodeEscaped are their twins, and the only
// version under -tags noasm).

// jsonAVX2 says whether the AVX2 loops run (tests turn it off to check the twins).
var jsonAVX2 = cpu.X86.HasAVX2

// jsonAVX2Supported is whether this CPU has AVX2 (jsonAVX2 before tests turn it off).
var jsonAVX2Supported = cpu.X86.HasAVX2

// scanPlainAVX2 returns the index in p[0:n] of the first byte that scanString must
// look at: a quote, a control character, a byte ≥ 0x80, or a backslash that does not
// start a one-byte escape; one-byte escapes are skipped, and escaped says whether
// there were backslashes. It stops before the last 32 bytes. (esc is unused.)
//
//go:noescape
func scanPlainAVX2(p *byte, n int, esc *[256]byte) (i int, escaped bool)

// decodePlainAVX2 copies src[0:n], the contents of a valid JSON string, to dst,
// decoding one-byte escapes (esc[b] for the byte b after a backslash), until a \u or
// the last 64 bytes; i and o are how far it got in src and dst. It writes 32 bytes at
// a time: dst must have room for 32 bytes more than src (o <= i always).
//
//go:noescape
func decodePlainAVX2(dst, src *byte, n int, esc *[256]byte) (i, o int)

// scanPlain skips the plain stretch of the JSON string contents at b[i:] (see
// scanPlainAVX2); escaped says whether it skipped escapes.
func scanPlain(b []byte, i int) (int, bool) {
	if !jsonAVX2 || len(b)-i < 32 {
		return i, false
	}
	k, escaped := scanPlainAVX2(&b[i], len(b)-i, &simpleEscapes)
	return i + k, escaped
}

// decodePlain decodes the plain stretch of raw[i:] into buf[n:] (see decodePlainAVX2):
// buf must have 32 bytes more room than raw holds after i.
func decodePlain(buf []byte, n int, raw []byte, i int) (int, int) {
	if !jsonAVX2 || len(raw)-i < 65 {
		return i, n
	}
	_ = buf[n+len(raw)-i+31]
	di, do := decodePlainAVX2(&buf[n], &raw[i], len(raw)-i, &simpleEscapes)
	return i + di, n + do
}
