package tokenize

// Sizing the result of one large text.
//
// Encode sizes a new slice of ids from the tokens per byte of the encode state's last
// text (0.25 before the first). For a large text that guess decides how often the slice
// is grown: 100 MB of the mixed bench corpus (0.39 GPT-2 tokens per byte) on a fresh
// tokenizer grew a 0.25-per-byte slice twice, ~840 MB of ids as int in all, each page of
// it fresh memory faulted in, and took 3.1 s against 1.0 s once warm. So a text of
// sizeBySampleFrom bytes or more is encoded in two parts, cut where Cut allows (the ids
// do not change): the first ~sampleBytes, whose tokens per byte then size the slice for
// the whole with sampleSlack to spare.

// (Variables for the tests, which lower them.)
var (
	sizeBySampleFrom = 4 << 20
	sampleBytes      = 1 << 20
)

// sampleSlack: the rest of a text may be denser than its first part; growing the slice
// once costs a copy and fresh memory, spare room only its clearing.
const sampleSlack = 1.1

// encodeSized returns the ids of text (valid UTF-8, no raw added token in text[:skip])
// in a new slice sized from the ids of its first part, or from the state's last text
// when it cannot be cut there.
func encodeSized[T tokenID](t *Tokenizer, st *encodeState, text string, skip int) []T {
	p := t.Cut(text, sampleBytes, 2*sampleBytes)
	if p <= 0 {
		dst := makeIDs[T](int(float64(len(text))*st.tokensPerByte*sampleSlack) + 16)
		return encodeBPE(t, st, text, skip, dst)
	}
	first := encodeBPE(t, st, text[:p], min(skip, p), makeIDs[T](p/2+16))
	perByte := float64(len(first)) / float64(p)
	dst := makeIDs[T](len(first) + int(float64(len(text)-p)*perByte*sampleSlack) + 16)
	dst = append(dst, first...)
	return encodeBPE(t, st, text[p:], max(0, skip-p), dst)
}
