//go:build amd64 && !noasm && gc

package prep

import "golang.org/x/sys/cpu"

// Stubs of jsontext_amd64.s: the plain stretches of JSON strings, 32 bytes per AVX2
// step (the SWAR loops of scanString and appendEscaped are their twins, and the only
// version under -tags noasm).

// jsonLevel is the vector code that runs: jsonAVX512, jsonAVX2, or jsonSWAR (tests lower it to check the twins); jsonLevelSupported is
// what this CPU has.
var jsonLevel, jsonLevelSupported = jsonCPULevel(), jsonCPULevel()

func jsonCPULevel() int {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasPOPCNT:
		return jsonAVX512
	case cpu.X86.HasAVX2:
		return jsonAVX2
	}
	return jsonSWAR
}

// scanPlainAVX2 returns the index in p[0:n] of the first byte that scanString must
// look at: a quote, a control character, a byte ≥ 0x80, or a backslash that does not
// start a one-byte escape; one-byte escapes are skipped, and escaped says whether
// there were backslashes. It stops before the last 32 bytes. (esc is unused.)
//
//go:noescape
func scanPlainAVX2(p *byte, n int, esc *[256]byte) (i int, escaped bool)

// scanPlainAVX512 is scanPlainAVX2, 64 bytes per step, stopping before the last 64.
//
//go:noescape
func scanPlainAVX512(p *byte, n int) (i int, escaped bool)

// decodePlainAVX2 copies src[0:n], the contents of a valid JSON string, to dst,
// decoding one-byte escapes (esc[b] for the byte b after a backslash), until a \u or
// the last 64 bytes; i and o are how far it got in src and dst. It writes 32 bytes at
// a time: dst must have room for 32 bytes more than src (o <= i always).
//
//go:noescape
func decodePlainAVX2(dst, src *byte, n int, esc *[256]byte) (i, o int)

// decodePlainAVX512 is decodePlainAVX2, 64 bytes per step, writing the escaped bytes
// through table (escapeTable), until a \u or the last 64 bytes.
//
//go:noescape
func decodePlainAVX512(dst, src *byte, n int, table *[128]byte) (i, o int)

// scanPlain skips the plain stretch of the JSON string contents at b[i:] (see
// scanPlainAVX2); escaped says whether it skipped escapes.
func scanPlain(b []byte, i int) (int, bool) {
	if jsonLevel == jsonAVX512 && len(b)-i >= 64 {
		k, escaped := scanPlainAVX512(&b[i], len(b)-i)
		return i + k, escaped
	}
	if jsonLevel < jsonAVX2 || len(b)-i < 32 {
		return i, false
	}
	k, escaped := scanPlainAVX2(&b[i], len(b)-i, &simpleEscapes)
	return i + k, escaped
}

// decodePlain decodes the plain stretch of raw[i:] into buf[n:] (see decodePlainAVX2):
// buf must have 32 bytes more room than raw holds after i.
func decodePlain(buf []byte, n int, raw []byte, i int) (int, int) {
	if jsonLevel == jsonAVX512 && len(raw)-i >= 64 {
		_ = buf[n+len(raw)-i-1]
		di, do := decodePlainAVX512(&buf[n], &raw[i], len(raw)-i, &escapeTable)
		return i + di, n + do
	}
	if jsonLevel < jsonAVX2 || len(raw)-i < 65 {
		return i, n
	}
	_ = buf[n+len(raw)-i+31]
	di, do := decodePlainAVX2(&buf[n], &raw[i], len(raw)-i, &simpleEscapes)
	return i + di, n + do
}
