package tokenize

import "unicode/utf8"

// Sizing the result of one large text.
//
// Encode sizes a new slice of ids from the tokens per byte of the encode state's last
// text (0.25 before the first). For a large text that guess decides how often the slice
// is grown, and growing one of many megabytes is costly: append doubles it, copies the
// ids and clears the new half, and every page of both is fresh memory faulted in. 100 MB
// of the mixed bench corpus (0.39 GPT-2 tokens per byte) on a fresh tokenizer grew a
// 0.25-per-byte slice twice, ~840 MB of ids as int in all, and took 3.1 s against 1.0 s
// once warm. Sized from its first megabyte alone (0.33 tokens per byte there) it still
// grew once and took 2.7 s against 0.62 (session s47, the Emerald Rapids VM).
//
// So a text of sizeBySampleFrom bytes or more is sized from its first part (encoded
// first, cut where Cut allows: the ids do not change) and from sampleSpots short samples
// spread over the rest (encoded and thrown away: ~0.1% more work for 100 MB, and the
// caches keep what they met), with sampleSlack to spare. The rest is then encoded in
// parts of about partBytes; before each, a slice without room for it at the densest
// rate met so far is grown once, to room for all that is left at that rate, with a copy
// of the ids so far into uncleared memory (no doubling, no clearing).

// (Variables for the tests, which lower them.)
var (
	sizeBySampleFrom = 4 << 20
	sampleBytes      = 1 << 20
	sampleSpots      = 8
	sampleSpotBytes  = 16 << 10
	partBytes        = 8 << 20
)

// sampleSlack: the rest of a text may be denser than the samples; growing the slice
// costs a copy and fresh memory, spare room only address space (it is not cleared, and
// the result's capacity is cut back to a little).
const sampleSlack = 1.15

// encodeSized returns the ids of text (valid UTF-8, no raw added token in text[:skip])
// in a new slice sized from the ids of its first part and of samples of the rest, or
// from the state's last text when it cannot be cut there.
func encodeSized[T tokenID](t *Tokenizer, st *encodeState, text string, skip int) []T {
	p := t.Cut(text, sampleBytes, 2*sampleBytes)
	if p <= 0 {
		dst := makeIDs[T](int(float64(len(text))*st.tokensPerByte*sampleSlack) + 16)
		return encodeBPE(t, st, text, skip, dst)
	}
	first := encodeBPE(t, st, text[:p], min(skip, p), makeIDs[T](p/2+16))
	rate := max(float64(len(first))/float64(p), sampledRate[T](t, st, text[p:]))
	dst := makeIDs[T](len(first) + int(float64(len(text)-p)*rate*sampleSlack) + 16)
	dst = append(dst, first...)
	for done := p; done < len(text); {
		n := len(text) - done
		if n > 2*partBytes {
			if c := t.Cut(text[done:], partBytes, 2*partBytes); c > 0 {
				n = c
			}
		}
		if need := int(float64(n)*rate*sampleSlack) + 16; cap(dst)-len(dst) < need {
			grown := makeIDs[T](len(dst) + max(need, int(float64(len(text)-done)*rate*sampleSlack)+16))
			dst = append(grown, dst...)
		}
		before := len(dst)
		dst = encodeBPE(t, st, text[done:done+n], max(0, skip-done), dst)
		rate = max(rate, float64(len(dst)-before)/float64(n))
		done += n
	}
	return dst
}

// sampledRate encodes sampleSpots pieces of about sampleSpotBytes spread over text
// (each starting at a character) into scratch memory and returns their tokens per
// byte, 0 if text is too short to sample. The samples' edges cut pre-tokens, which
// moves a count by a token or two: nothing at this size.
func sampledRate[T tokenID](t *Tokenizer, st *encodeState, text string) float64 {
	if len(text) < 4*sampleSpots*sampleSpotBytes {
		return 0
	}
	scratch := make([]T, 0, sampleSpotBytes+16)
	ids, bytes := 0, 0
	for i := range sampleSpots {
		at := len(text) / sampleSpots * i
		for at < len(text) && !utf8.RuneStart(text[at]) {
			at++
		}
		end := min(at+sampleSpotBytes, len(text))
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		scratch = encodeBPE(t, st, text[at:end], 0, scratch[:0])
		ids, bytes = ids+len(scratch), bytes+end-at
	}
	return float64(ids) / float64(max(bytes, 1))
}
