//go:build !amd64 || noasm || !gc

package prep

// Without AVX2 the SWAR loops of scanString and appendEscaped do all the work.

var jsonLevel, jsonLevelSupported = jsonSWAR, jsonSWAR

func scanPlain(b []byte, i int) (int, bool) { return i, false }

func decodePlain(buf []byte, n int, raw []byte, i int) (int, int) { return i, n }
